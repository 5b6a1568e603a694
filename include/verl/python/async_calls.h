// Running user code concurrently on an asyncio event loop of the embedded interpreter, shared by the tools of the
// multi-turn rollout (agent/tools.cpp) and async reward functions (reward/scorers/python_reward_function.cpp):
// the Python module `_verl_cpp_async` (kept in sys.modules) with
//   invoke(fn, *args, **kwargs)        fn's result, awaited when it is awaitable; SystemExit / KeyboardInterrupt
//                                      from user code become UserCodeExit (asyncio would let them out of the loop)
//   with_timeout(awaitable, timeout)   its result, or CallTimeout after `timeout` s (<= 0: none); the task is
//                                      cancelled and given a moment to unwind, not waited for further
//   in_daemon_thread(fn, kwargs, what) fn(**kwargs) on a daemon thread of its own (verl's asyncio.to_thread), told
//                                      to stop (TimeoutError raised inside it) when the awaiting task is cancelled
//   describe(exc)                      "Type: message" (a UserCodeExit's own text)
// Code that blocks the loop itself is stopped by python::UserCallLimit around loop.run_until_complete.
#pragma once

#include <pybind11/pybind11.h>

namespace verl::python {

// The module, made once per process (call with the GIL held).
pybind11::object async_calls_module();

}  // namespace verl::python
