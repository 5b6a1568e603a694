// A bound on the memory one call of user code (a chat template) may hold in the embedded interpreter: while a
// MemoryBudget lives, the Python allocations of its thread are counted (the raw allocator, which takes every
// block over 512 bytes, and pymalloc's arenas, which hold the small ones), and one that would take the total
// past the limit fails, so Python raises MemoryError instead of taking the machine's memory.
//
//   pybind11::gil_scoped_acquire gil;
//   verl::python::MemoryBudget budget(1 << 30);
//   try { render(); } catch (pybind11::error_already_set&) { if (budget.exceeded()) ...over the limit... }
#pragma once

#include <cstddef>
#include <memory>

namespace verl::python {

class MemoryBudget {
 public:
  // Made and destroyed with the GIL held, on the thread that runs the call; budgets do not nest.
  explicit MemoryBudget(size_t limit_bytes);
  ~MemoryBudget();
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // True once an allocation was refused.
  bool exceeded() const;
  size_t limit_bytes() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace verl::python
