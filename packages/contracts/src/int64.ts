/** The range of protobuf's int64 and of Postgres's bigint: a value outside it cannot be sent or stored. */
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

const POSITIVE_DECIMAL = /^[1-9][0-9]{0,18}$/;

/** Whether text is a positive int64 in plain decimal (a bigserial id, such as a ledger cursor). */
export function isPositiveInt64(text: string): boolean {
  return POSITIVE_DECIMAL.test(text) && BigInt(text) <= INT64_MAX;
}
