import type { Queryable } from '../../infra/postgres/database.ts';
import type { MqlSource } from '../data/mql/mql-compiler.ts';
import { quoteText } from '../data/mql/mql-sql.ts';

/**
 * PIPELINE_SINK as an MQL data source (wire-protocol §2.3, §3.1): the output documents of one pipeline
 * (the reference's `sink-<pipeline-id>` collection). They are free-form, so the whole document is the jsonb
 * `doc` column (`_id`, the stage output fields, `_viam_pipeline_run`). The relation is the view
 * `sensordata.pipeline_sink` (migration 0010), which shows the query session only its own organization's
 * rows; the condition on `pipeline_id` (a plain column, pushed through the security barrier) picks the
 * pipeline and lets custom sink indexes, partial on `pipeline_id`, apply.
 */
export function pipelineSinkSource(pipelineId: string): MqlSource {
  return {
    relation: 'sensordata.pipeline_sink',
    fields: [],
    restSql: 'src.doc',
    where: `src.pipeline_id = ${quoteText(pipelineId)}::uuid`,
  };
}

/** Whether the pipeline exists and belongs to the organization (querying another's sink is NotFound). */
export async function pipelineBelongsTo(
  db: Queryable,
  pipelineId: string,
  organizationId: string,
): Promise<boolean> {
  const result = await db.query('SELECT 1 FROM data_pipelines WHERE id = $1 AND organization_id = $2', [
    pipelineId,
    organizationId,
  ]);
  return (result.rowCount ?? 0) > 0;
}
