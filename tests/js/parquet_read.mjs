// Reads a parquet file with hyparquet (an independent implementation) and prints one JSON object per row per
// line, for verl.cpp's cross-check tests. MAPs are objects keyed by the map keys; struct fields are laid out in schema order with absent ones as null
// (hyparquet leaves them out), BigInts become numbers when exact (else decimal strings), byte arrays UTF-8
// text. GZIP pages are inflated with node's zlib.
import { gunzipSync } from 'node:zlib'
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet'

const file = process.argv[2]
if (!file) {
  console.error('usage: node parquet_read.mjs FILE.parquet')
  process.exit(2)
}

function scalar(value) {
  if (value === undefined || value === null) return null
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString()
  if (value instanceof Uint8Array) return new TextDecoder().decode(value)
  return value
}

// Lays `value` out by the schema node: LIST groups are arrays of their element, other groups objects.
function layout(value, node) {
  if (value === undefined || value === null) return null
  const { element, children } = node
  if (!children.length) return scalar(value)
  const annotation = element.converted_type ?? element.logical_type?.type
  if (annotation === 'LIST' && children.length === 1) {
    const repeated = children[0]
    const unwrap = repeated.children.length === 1 && repeated.element.name !== 'array' &&
      repeated.element.name !== `${element.name}_tuple`
    const item = unwrap ? repeated.children[0] : repeated
    return value.map((v) => layout(v, item))
  }
  if ((annotation === 'MAP' || annotation === 'MAP_KEY_VALUE') && children.length === 1 &&
      children[0].children.length === 2) {
    const valueNode = children[0].children[1]
    const out = {}
    for (const [k, v] of Object.entries(value)) out[k] = layout(v, valueNode)
    return out
  }
  if (element.repetition_type === 'REPEATED' && Array.isArray(value)) {
    return value.map((v) => layout(v, { element: { ...element, repetition_type: 'REQUIRED' }, children }))
  }
  const out = {}
  for (const child of children) out[child.element.name] = layout(value[child.element.name], child)
  return out
}

const buffer = await asyncBufferFromFile(file)
const metadata = await parquetMetadataAsync(buffer)
const root = parquetSchema(metadata)
const rows = await parquetReadObjects({
  file: buffer,
  metadata,
  compressors: { GZIP: (input) => new Uint8Array(gunzipSync(input)) },
})
const lines = rows.map((row) => JSON.stringify(layout(row, root)))
process.stdout.write(lines.length ? lines.join('\n') + '\n' : '')
