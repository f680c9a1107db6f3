import assert from 'node:assert/strict';
import { test } from 'node:test';
import { signHs256Token, verifyHs256Token } from '../src/index.ts';

const key = Buffer.alloc(32, 7);
const other = Buffer.alloc(32, 8);

test('a signed token verifies with its key and returns the claims', () => {
  const token = signHs256Token({ kid: 'k1' }, { sub: 'me', n: 1 }, key);
  assert.deepEqual(
    verifyHs256Token(token, (header) => (header.kid === 'k1' ? key : undefined)),
    { sub: 'me', n: 1 },
  );
});

test('a wrong key, an unknown kid, a tampered body or alg "none" do not verify', () => {
  const token = signHs256Token({ kid: 'k1' }, { sub: 'me' }, key);
  assert.equal(
    verifyHs256Token(token, () => other),
    undefined,
  );
  assert.equal(
    verifyHs256Token(token, () => undefined),
    undefined,
  );
  const [header, , signature] = token.split('.');
  const forged = Buffer.from(JSON.stringify({ sub: 'admin' })).toString('base64url');
  assert.equal(
    verifyHs256Token(`${header}.${forged}.${signature}`, () => key),
    undefined,
  );
  const none = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
  assert.equal(
    verifyHs256Token(`${none}.${forged}.`, () => key),
    undefined,
  );
  assert.equal(
    verifyHs256Token('not-a-token', () => key),
    undefined,
  );
});
