/**
 * The error codes of the claims rules (publish-rules.ts), with their status. Descriptions name
 * the claims at stake, never claims of a resource the caller cannot see.
 */
import { errorCatalogue } from '@gatehouse-mcp/gateway';

const STATUS = {
  /** Under full authorization an entry needs claims. */
  claims_required: 400,
  /** Claims the caller's token does not hold (publish claims, a new resource's, or those of the managed source written to). */
  claims_not_held: 403,
  /** A later version whose claims differ from the entry's first. */
  claims_mismatch: 409,
} as const;

/** The GatewayError for a claims-rule code, with the status the catalogue gives it. */
export const claimsError = errorCatalogue(STATUS);
