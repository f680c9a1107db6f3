-- Users filter on `time_received` (the Viam docs' habit: `{$match: {time_received: {$gte: …}}}`, `WHERE
-- time_received > …`), which had no index: a one-week query scanned every row of the organization. Readings
-- arrive in roughly `time_received` order within each monthly partition, so a BRIN index (min/max per block
-- range) narrows such a query to the block ranges that can hold the week, at almost no cost per insert (a
-- B-tree on the column would add one index entry per reading to the ingest path). `autosummarize` asks
-- autovacuum to summarize a block range as soon as inserts move past it, so fresh data is indexed without
-- waiting for a VACUUM; ranges not yet summarized are simply always read, never wrongly skipped.
-- 32 pages (256 KiB) per range: a few thousand readings per range, still a tiny index.
--
-- `time_requested` needs no index of its own: it equals `captured_at` (the partition key, B-tree indexed
-- with the organization and the source) whenever it is set, and the MQL compiler adds the same bound on
-- `captured_at` (see mql-compiler.ts, `rangeColumn`).
CREATE INDEX readings_time_received_brin ON readings USING brin (time_received)
  WITH (pages_per_range = 32, autosummarize = on);
-- Hot storage rows are copied from `readings` as they arrive, so they are in the same order.
CREATE INDEX hot_readings_time_received_brin ON hot_readings USING brin (time_received)
  WITH (pages_per_range = 32, autosummarize = on);
