// Writes a parquet file with hyparquet-writer (an independent implementation) covering every physical type
// and the encodings it offers (PLAIN, RLE, RLE_DICTIONARY, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY,
// DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT; DATA_PAGE_V2; several row groups and pages; LIST, MAP, structs), then prints the rows it
// wrote as JSON lines, for verl.cpp's reader test to compare against.
//   node parquet_write.mjs OUT.parquet [SNAPPY|UNCOMPRESSED|GZIP] [SEED]
import { gzipSync } from 'node:zlib'
import { parquetWriteFile } from 'hyparquet-writer'

const [file, codec = 'SNAPPY', seedText = '7'] = process.argv.slice(2)
if (!file) {
  console.error('usage: node parquet_write.mjs OUT.parquet [SNAPPY|UNCOMPRESSED|GZIP] [SEED]')
  process.exit(2)
}

// mulberry32: small seeded PRNG so the data is reproducible.
let state = Number(seedText) >>> 0
function random() {
  state = (state + 0x6d2b79f5) >>> 0
  let t = state
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const int = (n) => Math.floor(random() * n)
const pick = (items) => items[int(items.length)]
const words = ['alpha', 'beta', 'gamma', 'δέλτα', '数据', 'emoji 🚀', '', 'x'.repeat(300), 'quote "q" \\ \n tab\t']
const text = () => Array.from({ length: int(4) }, () => pick(words)).join(' ')
const maybe = (make) => (random() < 0.2 ? null : make())

const n = 700
const cols = {
  id: [], str_plain: [], str_dict: [], str_delta_len: [], str_delta: [], i32_delta: [], i64_delta: [], i32_plain: [],
  f32_split: [], f64_split: [], f64_plain: [], bool_rle: [], bool_plain: [], half: [], tags: [], messages: [], info: [], attrs: [],
}
for (let i = 0; i < n; ++i) {
  cols.id.push(BigInt(i))
  cols.str_plain.push(maybe(text))
  cols.str_dict.push(maybe(() => pick(['user', 'assistant', 'system'])))
  cols.str_delta_len.push(text())
  cols.str_delta.push(maybe(() => `prefix/common/${int(50)}/${text()}`))
  cols.i32_delta.push(maybe(() => int(2 ** 31) * (random() < 0.5 ? -1 : 1)))
  cols.i64_delta.push(maybe(() => BigInt(int(2 ** 26)) * BigInt(int(2 ** 26)) * (random() < 0.5 ? -1n : 1n)))
  cols.i32_plain.push(int(1000) - 500)
  cols.f32_split.push(maybe(() => Math.fround((random() - 0.5) * 1e6)))
  cols.f64_split.push(maybe(() => (random() - 0.5) * 10 ** int(30)))
  cols.f64_plain.push(random())
  cols.bool_rle.push(maybe(() => random() < 0.3))
  cols.bool_plain.push(random() < 0.5)
  cols.half.push(maybe(() => (int(4096) - 2048) / 4))
  cols.tags.push(maybe(() => Array.from({ length: int(4) }, () => pick(words))))
  cols.messages.push(Array.from({ length: int(3) }, () => ({ role: pick(['user', 'assistant']), content: text() })))
  cols.attrs.push(maybe(() => {
    const out = {}
    for (const key of ['k1', 'k2', 'ключ']) if (random() < 0.5) out[key] = maybe(() => int(1000))
    return out
  }))
  cols.info.push(maybe(() => ({ index: BigInt(i), split: pick(['train', 'test']), score: maybe(() => random()) })))
}

const columnData = [
  { name: 'id', data: cols.id, type: 'INT64', nullable: false },
  { name: 'str_plain', data: cols.str_plain, type: 'STRING', encoding: 'PLAIN' },
  { name: 'str_dict', data: cols.str_dict, type: 'STRING', encoding: 'RLE_DICTIONARY' },
  { name: 'str_delta_len', data: cols.str_delta_len, type: 'STRING', encoding: 'DELTA_LENGTH_BYTE_ARRAY', nullable: false },
  { name: 'str_delta', data: cols.str_delta, type: 'STRING', encoding: 'DELTA_BYTE_ARRAY' },
  { name: 'i32_delta', data: cols.i32_delta, type: 'INT32', encoding: 'DELTA_BINARY_PACKED' },
  { name: 'i64_delta', data: cols.i64_delta, type: 'INT64', encoding: 'DELTA_BINARY_PACKED' },
  { name: 'i32_plain', data: cols.i32_plain, type: 'INT32', encoding: 'PLAIN', nullable: false },
  { name: 'f32_split', data: cols.f32_split, type: 'FLOAT', encoding: 'BYTE_STREAM_SPLIT' },
  { name: 'f64_split', data: cols.f64_split, type: 'DOUBLE', encoding: 'BYTE_STREAM_SPLIT' },
  { name: 'f64_plain', data: cols.f64_plain, type: 'DOUBLE', encoding: 'PLAIN', nullable: false },
  { name: 'bool_rle', data: cols.bool_rle, type: 'BOOLEAN', encoding: 'RLE' },
  { name: 'bool_plain', data: cols.bool_plain, type: 'BOOLEAN', encoding: 'PLAIN', nullable: false },
  { name: 'half', data: cols.half, type: 'FLOAT16' },
  { name: 'tags', data: cols.tags },
  { name: 'messages', data: cols.messages },
  { name: 'info', data: cols.info },
  { name: 'attrs', data: cols.attrs },
]

// Explicit schema: the nested columns as a LIST of strings, a LIST of structs and a struct.
const leaf = (name, type, repetition_type = 'OPTIONAL', extra = {}) => ({ name, type, repetition_type, ...extra })
const utf8 = { converted_type: 'UTF8' }
const schema = [
  { name: 'root', num_children: columnData.length },
  leaf('id', 'INT64', 'REQUIRED'),
  leaf('str_plain', 'BYTE_ARRAY', 'OPTIONAL', utf8),
  leaf('str_dict', 'BYTE_ARRAY', 'OPTIONAL', utf8),
  leaf('str_delta_len', 'BYTE_ARRAY', 'REQUIRED', utf8),
  leaf('str_delta', 'BYTE_ARRAY', 'OPTIONAL', utf8),
  leaf('i32_delta', 'INT32'),
  leaf('i64_delta', 'INT64'),
  leaf('i32_plain', 'INT32', 'REQUIRED'),
  leaf('f32_split', 'FLOAT'),
  leaf('f64_split', 'DOUBLE'),
  leaf('f64_plain', 'DOUBLE', 'REQUIRED'),
  leaf('bool_rle', 'BOOLEAN'),
  leaf('bool_plain', 'BOOLEAN', 'REQUIRED'),
  leaf('half', 'FIXED_LEN_BYTE_ARRAY', 'OPTIONAL', { type_length: 2, logical_type: { type: 'FLOAT16' } }),
  { name: 'tags', repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  leaf('element', 'BYTE_ARRAY', 'OPTIONAL', utf8),
  { name: 'messages', repetition_type: 'REQUIRED', num_children: 1, converted_type: 'LIST' },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', repetition_type: 'REQUIRED', num_children: 2 },
  leaf('role', 'BYTE_ARRAY', 'REQUIRED', utf8),
  leaf('content', 'BYTE_ARRAY', 'OPTIONAL', utf8),
  { name: 'info', repetition_type: 'OPTIONAL', num_children: 3 },
  leaf('index', 'INT64', 'REQUIRED'),
  leaf('split', 'BYTE_ARRAY', 'OPTIONAL', utf8),
  leaf('score', 'DOUBLE'),
  { name: 'attrs', repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'MAP' },
  { name: 'key_value', repetition_type: 'REPEATED', num_children: 2 },
  leaf('key', 'BYTE_ARRAY', 'REQUIRED', utf8),
  leaf('value', 'INT32'),
]

parquetWriteFile({
  filename: file,
  columnData: columnData.map(({ type, nullable, ...rest }) => rest),
  schema,
  codec,
  compressors: { GZIP: (input) => new Uint8Array(gzipSync(input)) },
  rowGroupSize: [100, 250],
  pageSize: 2048,
})

const plain = (v) => (typeof v === 'bigint' ? Number(v) : v)
const names = columnData.map((c) => c.name)
const lines = []
for (let i = 0; i < n; ++i) {
  const row = {}
  for (const name of names) row[name] = plain(cols[name][i])
  lines.push(JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? Number(v) : v)))
}
process.stdout.write(lines.join('\n') + '\n')
