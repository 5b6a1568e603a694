// safetensors files (model weights, checkpoints): the header length, the JSON header (dtypes, shapes, data
// offsets, __metadata__) and every tensor view it describes.
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "verl/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = verl::fuzz::scratch_path("input.safetensors");
  verl::fuzz::write_bytes(path, data, size);
  verl::fuzz::expect_only_verl_errors([&] {
    verl::io::SafetensorsFile file(path);
    volatile uint8_t sink = 0;
    for (const auto& name : file.names()) {
      const verl::io::TensorView& view = file.get(name);
      if (view.nbytes > 0) sink = sink ^ view.data[0] ^ view.data[view.nbytes - 1];
    }
  });
  return 0;
}
