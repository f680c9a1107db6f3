-- A tabular upload's receipt remembers the latest capture time among its readings, so DeleteTabularData
-- can delete the receipts of the uploads it deleted entirely: otherwise a later upload of the same capture
-- would be answered as a duplicate of readings that no longer exist, and stored nowhere. NULL for binary
-- receipts (deleted with their binary_data row) and for tabular receipts written before this migration
-- (deleted when all of an organization's tabular data is deleted).
ALTER TABLE upload_receipts ADD COLUMN captured_until timestamptz;
CREATE INDEX upload_receipts_captured_until_idx ON upload_receipts (organization_id, captured_until)
  WHERE captured_until IS NOT NULL;
