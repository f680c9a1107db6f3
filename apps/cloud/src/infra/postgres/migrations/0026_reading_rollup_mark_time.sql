-- When a reading-rollup mark was written (migration 0023): the materializer leaves a bucket dirty while it
-- is still being written to (its newest mark younger than the settle time), so the current hour of a busy
-- source is recomputed once after it ends rather than after every upload; queries read it raw until then.
ALTER TABLE reading_rollup_marks ADD COLUMN marked_at timestamptz NOT NULL DEFAULT now();
