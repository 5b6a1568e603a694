// The `_verl_cpp_async` module of verl/python/async_calls.h.
#include "verl/python/async_calls.h"

#include <pybind11/embed.h>

#include "verl/python/user_code.h"

namespace py = pybind11;

namespace verl::python {

namespace {

const char* const kAsyncCallsSource = R"PY(
import asyncio
import inspect
import threading


class CallTimeout(Exception):
    """A call did not finish within the time limit (kept apart from a TimeoutError the user code raises)."""


class UserCodeExit(Exception):
    """SystemExit / KeyboardInterrupt raised by user code, which asyncio would let out of the event loop."""


def describe(exc):
    if isinstance(exc, UserCodeExit):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


async def invoke(fn, *args, **kwargs):
    """fn(*args, **kwargs), awaited when it returns an awaitable (user methods may be async or plain)."""
    try:
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result
    except asyncio.CancelledError:
        raise
    except (SystemExit, KeyboardInterrupt) as exc:
        raise UserCodeExit(f"{type(exc).__name__}: {exc}") from None


async def with_timeout(awaitable, timeout):
    task = asyncio.ensure_future(awaitable)
    if timeout <= 0:
        return await task
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        # A moment to unwind; not awaited further: code that ignores the cancellation must not hold the batch.
        await asyncio.wait({task}, timeout=0.05)
        raise CallTimeout()
    return task.result()


def stop_thread(thread):
    """Raises TimeoutError inside a worker thread whose call timed out (it stops at its next Python bytecode)."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(TimeoutError))


async def in_daemon_thread(fn, kwargs, what):
    """fn(**kwargs) on a thread of its own, as verl's asyncio.to_thread, so plain functions run concurrently. The
    thread is a daemon and is told to stop when the call is cancelled (timed out): a call that never returns
    cannot hold the process at exit."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(ok, value):
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def target():
        try:
            ok, value = True, fn(**kwargs)
        except (SystemExit, KeyboardInterrupt) as exc:
            ok, value = False, UserCodeExit(f"{type(exc).__name__}: {exc}")
        except BaseException as exc:
            ok, value = False, exc
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the loop is closed: nobody waits for this result any more
            pass

    thread = threading.Thread(target=target, name=what, daemon=True)
    thread.start()
    try:
        return await future
    except asyncio.CancelledError:
        if thread.is_alive():
            stop_thread(thread)
        raise
)PY";

}  // namespace

py::object async_calls_module() {
  py::module_ sys = py::module_::import("sys");
  py::dict modules = sys.attr("modules");
  if (modules.contains("_verl_cpp_async")) return modules["_verl_cpp_async"];
  install_exit_guards();  // before any user code runs: `from os import _exit` gets the guarded one
  py::module_ module = py::module_::import("types").attr("ModuleType")("_verl_cpp_async");
  module.attr("__builtins__") = py::module_::import("builtins");
  py::exec(kAsyncCallsSource, module.attr("__dict__"));
  modules["_verl_cpp_async"] = module;
  return std::move(module);
}

}  // namespace verl::python
