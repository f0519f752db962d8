import type { Rgb } from './png.ts';

/**
 * A lossless (VP8L) WebP of one colour. Each of the five prefix codes is a "simple" code with a single
 * symbol, which has zero bit length: the pixel data itself then takes no bits at all.
 */
class LsbBitWriter {
  private bytes: number[] = [];
  private acc = 0;
  private count = 0;

  write(value: number, length: number): void {
    for (let i = 0; i < length; i++) {
      this.acc |= ((value >> i) & 1) << this.count;
      this.count++;
      if (this.count === 8) {
        this.bytes.push(this.acc);
        this.acc = 0;
        this.count = 0;
      }
    }
  }

  finish(): Buffer {
    if (this.count > 0) this.bytes.push(this.acc);
    return Buffer.from(this.bytes);
  }
}

function writeSingleSymbolCode(out: LsbBitWriter, symbol: number): void {
  out.write(1, 1); // simple code
  out.write(0, 1); // one symbol
  if (symbol < 2) {
    out.write(0, 1); // 1-bit symbol
    out.write(symbol, 1);
  } else {
    out.write(1, 1); // 8-bit symbol
    out.write(symbol, 8);
  }
}

export function encodeSolidWebp(width: number, height: number, color: Rgb): Buffer {
  const [r, g, b] = color;
  const bits = new LsbBitWriter();
  bits.write(0x2f, 8); // VP8L signature
  bits.write(width - 1, 14);
  bits.write(height - 1, 14);
  bits.write(0, 1); // alpha not used
  bits.write(0, 3); // version
  bits.write(0, 1); // no transform
  bits.write(0, 1); // no colour cache
  bits.write(0, 1); // no meta prefix codes
  writeSingleSymbolCode(bits, g); // green + length prefixes
  writeSingleSymbolCode(bits, r);
  writeSingleSymbolCode(bits, b);
  writeSingleSymbolCode(bits, 255); // alpha
  writeSingleSymbolCode(bits, 0); // distance
  const vp8l = bits.finish();
  const padded = vp8l.length % 2 === 1 ? Buffer.concat([vp8l, Buffer.alloc(1)]) : vp8l;

  const header = Buffer.alloc(20);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(4 + 8 + padded.length, 4);
  header.write('WEBP', 8, 'latin1');
  header.write('VP8L', 12, 'latin1');
  header.writeUInt32LE(vp8l.length, 16);
  return Buffer.concat([header, padded]);
}
