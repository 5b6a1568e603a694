#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include "verl/runtime/heap_reuse.h"

namespace verl::runtime {
namespace {

TEST(HeapReuse, LargeBlocksComeFromTheHeapAndAreReused) {
  ::unsetenv("VERL_HEAP_REUSE");
  ::unsetenv("MALLOC_MMAP_MAX_");
  ::unsetenv("MALLOC_MMAP_THRESHOLD_");
  ::unsetenv("MALLOC_TRIM_THRESHOLD_");
  ::unsetenv("GLIBC_TUNABLES");
  ASSERT_TRUE(configure_heap_reuse());
  const size_t size = size_t{48} << 20;  // above glibc's largest mmap threshold (32 MiB)
  const size_t mmapped_before = mallinfo2().hblkhd;
  void* first = std::malloc(size);
  ASSERT_NE(first, nullptr);
  std::memset(first, 1, size);
  EXPECT_EQ(mallinfo2().hblkhd, mmapped_before) << "the 48 MiB block was mmapped";
  std::free(first);
  void* second = std::malloc(size);
  EXPECT_EQ(second, first) << "the freed block was not reused";
  std::free(second);
}

TEST(HeapReuse, UserTuningOrOptOutIsLeftAlone) {
  ::setenv("VERL_HEAP_REUSE", "0", 1);
  EXPECT_FALSE(configure_heap_reuse());
  ::unsetenv("VERL_HEAP_REUSE");
  ::setenv("MALLOC_MMAP_THRESHOLD_", "131072", 1);
  EXPECT_FALSE(configure_heap_reuse());
  ::unsetenv("MALLOC_MMAP_THRESHOLD_");
}

}  // namespace
}  // namespace verl::runtime
