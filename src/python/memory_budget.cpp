#include "verl/python/memory_budget.h"

#include <Python.h>

#include <mutex>
#include <unordered_map>

#include "verl/common/error.h"

namespace verl::python {

// Blocks allocated under the budget, with their sizes: a free of one of them gives its bytes back. Blocks
// from before the budget (or from other threads) are not ours to count; those left at the end are forgotten.
struct MemoryBudget::State {
  size_t limit = 0;
  size_t held = 0;
  bool exceeded = false;
  std::unordered_map<void*, size_t> blocks;  // std::allocator: malloc, never the hooks below

  bool admit(size_t more) {
    if (held + more <= limit && more <= limit) return true;
    exceeded = true;
    return false;
  }
  void add(void* block, size_t size) {
    blocks[block] = size;
    held += size;
  }
  void remove(void* block) {
    auto it = blocks.find(block);
    if (it == blocks.end()) return;
    held -= it->second;
    blocks.erase(it);
  }
};

namespace {

// The thread's budget; hooks run on any thread, with or without the GIL (the raw domain), so each only ever
// touches its own thread's.
thread_local MemoryBudget::State* t_budget = nullptr;

PyMemAllocatorEx g_raw;          // the allocators the hooks wrap
PyObjectArenaAllocator g_arena;
std::once_flag g_hooks_installed;

void* raw_malloc(void* ctx, size_t size) {
  MemoryBudget::State* budget = t_budget;
  if (budget == nullptr) return g_raw.malloc(g_raw.ctx, size);
  if (!budget->admit(size)) return nullptr;
  void* block = g_raw.malloc(g_raw.ctx, size);
  if (block != nullptr) budget->add(block, size);
  return block;
}

void* raw_calloc(void* ctx, size_t count, size_t size) {
  MemoryBudget::State* budget = t_budget;
  if (budget == nullptr) return g_raw.calloc(g_raw.ctx, count, size);
  if (size != 0 && count > SIZE_MAX / size) return nullptr;
  if (!budget->admit(count * size)) return nullptr;
  void* block = g_raw.calloc(g_raw.ctx, count, size);
  if (block != nullptr) budget->add(block, count * size);
  return block;
}

void* raw_realloc(void* ctx, void* old, size_t size) {
  MemoryBudget::State* budget = t_budget;
  if (budget == nullptr) return g_raw.realloc(g_raw.ctx, old, size);
  // A block from before the budget counts in full once it grows under it (its old size is not known).
  auto it = old != nullptr ? budget->blocks.find(old) : budget->blocks.end();
  const size_t before = it != budget->blocks.end() ? it->second : 0;
  if (size > before && !budget->admit(size - before)) return nullptr;
  void* block = g_raw.realloc(g_raw.ctx, old, size);
  if (block == nullptr) return nullptr;
  if (old != nullptr) budget->remove(old);
  budget->add(block, size);
  return block;
}

void raw_free(void* ctx, void* block) {
  if (MemoryBudget::State* budget = t_budget; budget != nullptr && block != nullptr) budget->remove(block);
  g_raw.free(g_raw.ctx, block);
}

void* arena_alloc(void* ctx, size_t size) {
  MemoryBudget::State* budget = t_budget;
  if (budget == nullptr) return g_arena.alloc(g_arena.ctx, size);
  if (!budget->admit(size)) return nullptr;  // pymalloc then asks the raw allocator, which refuses too
  void* arena = g_arena.alloc(g_arena.ctx, size);
  if (arena != nullptr) budget->add(arena, size);
  return arena;
}

void arena_free(void* ctx, void* arena, size_t size) {
  if (MemoryBudget::State* budget = t_budget; budget != nullptr) budget->remove(arena);
  g_arena.free(g_arena.ctx, arena, size);
}

// Wraps the interpreter's allocators once (with the GIL held), as tracemalloc does: outside a budget the hooks
// only read a thread-local pointer and call through.
void install_hooks() {
  std::call_once(g_hooks_installed, [] {
    PyMem_GetAllocator(PYMEM_DOMAIN_RAW, &g_raw);
    PyMemAllocatorEx raw{nullptr, raw_malloc, raw_calloc, raw_realloc, raw_free};
    PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &raw);
    PyObject_GetArenaAllocator(&g_arena);
    PyObjectArenaAllocator arena{nullptr, arena_alloc, arena_free};
    PyObject_SetArenaAllocator(&arena);
  });
}

}  // namespace

MemoryBudget::MemoryBudget(size_t limit_bytes) : state_(std::make_unique<State>()) {
  VERL_ASSERT(t_budget == nullptr, "python", "memory budgets do not nest");
  install_hooks();
  state_->limit = limit_bytes;
  t_budget = state_.get();
}

MemoryBudget::~MemoryBudget() { t_budget = nullptr; }

bool MemoryBudget::exceeded() const { return state_->exceeded; }

size_t MemoryBudget::limit_bytes() const { return state_->limit; }

}  // namespace verl::python
