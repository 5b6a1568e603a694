// Reads a parquet file with hyparquet (an independent implementation) and prints one JSON object per row per
// line, for verl.cpp's cross-check tests. BigInts become numbers when exact (else decimal strings), byte arrays
// UTF-8 text. GZIP pages are inflated with node's zlib.
import { gunzipSync } from 'node:zlib'
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet'

const file = process.argv[2]
if (!file) {
  console.error('usage: node parquet_read.mjs FILE.parquet')
  process.exit(2)
}

function plain(value) {
  if (typeof value === 'bigint') {
    return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString()
  }
  if (value instanceof Uint8Array) return new TextDecoder().decode(value)
  if (Array.isArray(value)) return value.map(plain)
  if (value !== null && typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) out[k] = plain(v)
    return out
  }
  return value
}

const rows = await parquetReadObjects({
  file: await asyncBufferFromFile(file),
  compressors: { GZIP: (input) => new Uint8Array(gunzipSync(input)) },
})
const lines = rows.map((row) => JSON.stringify(plain(row)))
process.stdout.write(lines.length ? lines.join('\n') + '\n' : '')
