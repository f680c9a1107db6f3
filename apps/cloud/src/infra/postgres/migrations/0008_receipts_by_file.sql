-- Deleting binary data also deletes its upload receipts (otherwise a later upload of the same capture
-- would be answered as a duplicate of data that no longer exists, and stored nowhere).
CREATE INDEX upload_receipts_file_id_idx ON upload_receipts (organization_id, file_id);
