// Octal numeric header fields, read strictly and written the way ustar writers do.

const SPACE = 0x20;
const ZERO = 0x30;
const SEVEN = 0x37;

/**
 * Value of the octal field `block[start, start + length)`, or undefined when the field is
 * not: optional leading spaces, one or more octal digits, then only NULs and spaces. A field
 * filled with digits to its last byte (no terminator) is accepted. Base-256 fields (high bit
 * of the first byte set), empty fields and any other byte are refused.
 */
export function parseOctal(block: Uint8Array, start: number, length: number): number | undefined {
  const end = start + length;
  let i = start;
  while (i < end && block[i] === SPACE) i++;
  const first = i;
  let value = 0;
  while (i < end && block[i] >= ZERO && block[i] <= SEVEN) {
    value = value * 8 + (block[i] - ZERO);
    i++;
  }
  if (i === first) return undefined;
  for (; i < end; i++) {
    if (block[i] !== 0 && block[i] !== SPACE) return undefined;
  }
  return value;
}

/**
 * Writes `value` into `block[start, start + length)` as zero-padded octal digits followed by
 * a NUL. The caller guarantees `0 <= value < 8 ** (length - 1)`.
 */
export function writeOctal(block: Uint8Array, start: number, length: number, value: number): void {
  const digits = value.toString(8).padStart(length - 1, "0");
  for (let i = 0; i < length - 1; i++) block[start + i] = digits.charCodeAt(i);
  block[start + length - 1] = 0;
}
