// The DataProto wire format of the MPI transport (DataProto::deserialize: magic, version, CBOR meta and
// columns behind a depth-counting SAX, tensors checked against the bytes present). Property: what deserializes
// re-serializes, and that reads back to an equal DataProto (keys, dtypes, shapes, tensor bytes, JSON values).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz_support.h"
#include "verl/protocol/data_proto.h"

namespace {

using verl::protocol::DataProto;
using verl::protocol::Json;

// CBOR bytes, not Json's ==: a NaN read from the input is equal to itself here.
bool same_json(const Json& a, const Json& b) { return Json::to_cbor(a) == Json::to_cbor(b); }

bool same_tensor(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const torch::Tensor ca = a.contiguous(), cb = b.contiguous();
  const size_t nbytes = static_cast<size_t>(ca.numel()) * ca.element_size();
  return nbytes == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), nbytes) == 0;
}

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz: DataProto round trip: %s\n", what);
  std::abort();
}

void check_equal(const DataProto& a, const DataProto& b) {
  require(a.batch.size() == b.batch.size(), "tensor count differs");
  for (auto ia = a.batch.begin(), ib = b.batch.begin(); ia != a.batch.end(); ++ia, ++ib) {
    require(ia->first == ib->first, "tensor keys differ");
    require(same_tensor(ia->second, ib->second), "a tensor's dtype, shape or bytes differ");
  }
  require(a.non_tensor_batch.size() == b.non_tensor_batch.size(), "column count differs");
  for (auto ia = a.non_tensor_batch.begin(), ib = b.non_tensor_batch.begin(); ia != a.non_tensor_batch.end();
       ++ia, ++ib) {
    require(ia->first == ib->first, "column keys differ");
    require(same_json(Json(ia->second), Json(ib->second)), "a column's values differ");
  }
  require(same_json(a.meta_info, b.meta_info), "meta_info differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  DataProto first;
  bool accepted = false;
  verl::fuzz::expect_only_verl_errors([&] {
    first = DataProto::deserialize(bytes);
    accepted = true;
  });
  if (!accepted) return 0;
  // What the transport accepts must be a proto from_dict would build: workers index meta_info as an object.
  require(first.meta_info.is_object(), "accepted a meta_info that is not a JSON object");
  // From here on nothing may throw, not even verl::Error: an accepted proto always travels again.
  try {
    const std::string again = first.serialize();
    const DataProto second = DataProto::deserialize(again);
    check_equal(first, second);
    require(second.serialize() == again, "re-serialization is not stable");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an accepted DataProto does not travel again: %s\n", e.what());
    std::abort();
  }
  return 0;
}
