"""The function runner: the one program every sandbox runs (Python stdlib only).

It speaks length-prefixed JSON frames on stdin/stdout (4-byte big-endian length, then UTF-8 JSON)
with the platform (sandbox/channel.ts). It is a zygote: it never runs user code itself. Each
execution runs in a child forked in advance (so a call pays no fork), with its own result and
output pipes, resource limits and no access to the protocol pipes. User code therefore cannot
forge another execution's answer, and globals and imported modules die with the child.

In `exclusive` mode (sandboxes) one execution runs at a time; after it the runner kills every other
process in the sandbox (its own pid namespace), empties /tmp and /dev/shm and removes every SysV
IPC object and POSIX message queue before it forks the next child, so nothing of one execution is
left for the next. In `shared` mode (trusted workers) executions run
concurrently and nothing is cleaned.

With --single-use (a sandbox destroyed after one execution) the runner runs that one execution in
its own process and exits after answering (main_single_use).

Usage: runner.py [--mode exclusive|shared] [--isolated] [--single-use] [--memory-mb N] [--file-mb N]
                 [--max-procs N] [--max-files N] [--packages DIR]
"""

import _signal as signal
import builtins
import gc
import os
import resource
import select
import sys
import time

# Every import here is paid by every sandbox start (a single-use execution pays it on its critical
# path) and makes the zygote bigger, so each fork copies more page tables and each execution takes
# more copy-on-write faults. Hence `_signal` (the `signal` module builds enums: ~1 ms), no `struct`,
# and JSON through `_json` below. traceback and shutil are imported where used (errors only).

OUTPUT_LIMIT = 64 * 1024
RESULT_LIMIT = 16 * 1024 * 1024


def _not_json(o):
    raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)


# JSON through the C accelerator that json.loads / json.dumps use themselves (`_json`: the same
# scanner and encoder, so the same results), without the json package, which imports re, enum and
# functools: ~5 ms and ~1.5 MB of heap at every start. Falls back to json when there is no `_json`.
try:
    import _json

    class _DecodeSettings:
        # what json.JSONDecoder() hands its C scanner
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__

    _scan = _json.make_scanner(_DecodeSettings())

    def loads(data):
        text = data.decode("utf-8") if not isinstance(data, str) else data
        try:
            value, end = _scan(text, 0)
        except StopIteration as e:
            raise ValueError("malformed JSON at character %d" % e.value)
        if end != len(text) and text[end:].strip(" \t\r\n"):
            raise ValueError("extra data after JSON at character %d" % end)
        return value

    # a str as JSON (what the encoder does for one), without building an encoder
    _encode_str = _json.encode_basestring_ascii

    def dumps(obj, default=_not_json, allow_nan=True):
        """json.dumps(obj, separators=(",", ":"), default=default, allow_nan=allow_nan)."""
        return "".join(_json.make_encoder({}, default, _json.encode_basestring_ascii, None, ":", ",", False, False, allow_nan)(obj, 0))

except ImportError:  # a Python built without the accelerator
    import json

    def loads(data):
        return json.loads(data)

    def dumps(obj, default=None, allow_nan=True):
        return json.dumps(obj, separators=(",", ":"), default=default, allow_nan=allow_nan)

    _encode_str = dumps


def frame_head(n):
    """The 4-byte big-endian length in front of every frame."""
    return n.to_bytes(4, "big")


def parse_args(argv):
    opts = {"mode": "exclusive", "isolated": False, "single_use": False, "memory_mb": 0, "file_mb": 0, "max_procs": 0, "max_files": 256, "packages": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--isolated":
            opts["isolated"] = True
        elif a == "--single-use":
            opts["single_use"] = True
        elif a in ("--mode", "--memory-mb", "--file-mb", "--max-procs", "--max-files", "--packages"):
            i += 1
            key = a[2:].replace("-", "_")
            opts[key] = argv[i] if key in ("mode", "packages") else int(argv[i])
        i += 1
    return opts


def read_exact(fd, n):
    chunks = []
    while n > 0:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_frame(fd, limit=RESULT_LIMIT):
    head = read_exact(fd, 4)
    if head is None:
        return None
    n = int.from_bytes(head, "big")
    if n > limit:
        raise ValueError("frame of %d bytes is over the limit" % n)
    body = read_exact(fd, n)
    if body is None:
        return None
    return loads(body)


def write_all(fd, parts):
    """Writes the byte strings one after another, with one writev when the pipe takes them all
    (no joined copy of a large result)."""
    n = os.writev(fd, parts)
    total = sum(len(p) for p in parts)
    if n == total:
        return
    view = memoryview(b"".join(parts))[n:]
    while view:
        view = view[os.write(fd, view):]


def write_frame(fd, obj):
    body = dumps(obj, default=str).encode()
    write_all(fd, [frame_head(len(body)), body])


def no_input(*_args, **_kwargs):
    raise RuntimeError("input() is not supported in functions: there is no pause or resume")


class Child:
    """A forked process waiting for one request on its own pipe."""

    def __init__(self, opts, proto_fds):
        req_r, self.req_w = os.pipe()
        self.res_r, res_w = os.pipe()
        self.out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(self.req_w)
                os.close(self.res_r)
                os.close(self.out_r)
                child_main(opts, proto_fds, req_r, res_w, out_w)
            finally:
                os._exit(70)
        self.pid = pid
        os.set_blocking(self.out_r, False)
        os.close(req_r)
        os.close(res_w)
        os.close(out_w)
        self.request = None
        self.started = 0.0
        self.deadline = None
        self.result_buf = bytearray()
        self.output = bytearray()
        self.output_dropped = 0
        self.res_open = True
        self.out_open = True

    def close_fds(self):
        for fd in (self.req_w, self.res_r, self.out_r):
            try:
                os.close(fd)
            except OSError:
                pass


def _cap(which, value, dry):
    try:
        resource.setrlimit(which, resource.getrlimit(which) if dry else (value, value))
    except (ValueError, OSError):
        pass


def set_fixed_limits(opts, dry=False):
    """The rlimits that are the same for every execution of this sandbox. An exclusive child sets
    them while it waits for its request (fewer system calls on the call itself); `dry` (the
    warm-up's rehearsal) makes the same calls with the current values, which changes nothing."""
    if opts["memory_mb"] > 0:
        _cap(resource.RLIMIT_AS, opts["memory_mb"] * 1024 * 1024, dry)
    if opts["file_mb"] > 0:
        _cap(resource.RLIMIT_FSIZE, opts["file_mb"] * 1024 * 1024, dry)
    if opts["max_procs"] > 0:
        _cap(resource.RLIMIT_NPROC, opts["max_procs"], dry)
    if opts["max_files"] > 0:
        _cap(resource.RLIMIT_NOFILE, opts["max_files"], dry)
    _cap(resource.RLIMIT_CORE, 0, dry)


def execute(opts, req, rehearsal=False, fixed_set=False):
    """Runs one request in this (disposable) process: returns the encoded {"ok": ...} body and seconds.
    `rehearsal` is the warm-up's: the same code path, no rlimit changed. `fixed_set`: the fixed
    limits are in place already (set_fixed_limits)."""
    if not fixed_set:
        set_fixed_limits(opts, dry=rehearsal)
    # CPU seconds as a backstop of the wall-clock timeout the runner enforces.
    _cap(resource.RLIMIT_CPU, max(1, int(req.get("timeout_ms", 300000) / 1000)) + 2, rehearsal)
    started = time.monotonic()
    try:
        builtins.input = no_input
        code = compile(req["code"], "<function %s>" % req.get("name", "?"), "exec")
        scope = {"__name__": "__function__", "__builtins__": builtins}
        exec(code, scope)
        fn = scope.get(req.get("entrypoint") or "handler")
        if not callable(fn):
            raise NameError("the code defines no function %r" % (req.get("entrypoint") or "handler"))
        result = fn(req.get("input"), req.get("context") or {})
        body = {"ok": True, "result": result}
        try:
            encoded = dumps(body, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise TypeError("the function returned a value that is not JSON: %s" % e)
    except BaseException as e:  # SystemExit and KeyboardInterrupt included: they end this execution only
        # the user's frames only: drop the runner's own
        import traceback

        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next if e.__traceback__ else None))
        encoded = dumps({"ok": False, "error": {"type": type(e).__name__, "message": str(e)[:4000], "traceback": tb[-8000:]}})
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    data = encoded.encode()
    if len(data) > RESULT_LIMIT:
        data = dumps({"ok": False, "error": {"type": "ResultTooLarge", "message": "the result is over %d bytes" % RESULT_LIMIT, "traceback": ""}}).encode()
    return data, time.monotonic() - started


def child_main(opts, proto_fds, req_r, res_w, out_w):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    for fd in (devnull, out_w) + tuple(proto_fds):
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    warm_up(opts)
    req = read_frame(req_r)
    os.close(req_r)
    if req is None:
        os._exit(0)
    data, secs = execute(opts, req)
    write_all(res_w, [frame_head(len(data)), data, int(secs * 1e9).to_bytes(8, "big")])
    os._exit(0)


def kill_others(isolated):
    """Kills every process of this sandbox except the runner and the namespace's init."""
    if not isolated:
        return
    me, parent = os.getpid(), os.getppid()
    for attempt in range(100):
        try:
            os.kill(-1, signal.SIGKILL)  # everything this process may signal, except itself and init
        except ProcessLookupError:
            # No other process exists, not even an unreaped one (kill(-1) counts zombies too): the
            # usual case after an execution that started nothing, and /proc need not be read.
            if attempt == 0:
                return
        except PermissionError:
            pass
        # reap our own dead children; the namespace's init reaps the re-parented ones
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        left = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me, parent)]
        alive = []
        zombies = 0
        for pid in left:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        alive.append(pid)
                    else:
                        zombies += 1
            except OSError:
                pass
        # dead processes the namespace's init has not reaped yet hold nothing, but give it a moment
        # so the next execution starts with a clean process table
        if not alive and (zombies == 0 or attempt > 60):
            return
        time.sleep(0.001 if alive else 0.003)


def wipe(path):
    try:
        names = os.listdir(path)
    except OSError:
        return
    for n in names:
        p = os.path.join(path, n)
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                import shutil

                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass


_libc_handle = None
_libc_functions = {}


def libc(name, *args):
    """Calls a C library function (int, bytes or None arguments). Through `_ctypes` itself where it
    has call_function: the ctypes package costs ~3 ms and ~1 MB of heap at every start, for one
    prctl. Falls back to ctypes."""
    global _libc_handle
    fn = _libc_functions.get(name)
    if fn is None:
        try:
            from _ctypes import call_function, dlopen, dlsym

            if _libc_handle is None:
                _libc_handle = dlopen(None, os.RTLD_NOW)
            address = dlsym(_libc_handle, name)

            def fn(*a):
                return call_function(address, a)

        except ImportError:
            import ctypes

            fn = getattr(ctypes.CDLL(None), name)
        _libc_functions[name] = fn
    return fn(*args)


def ABSOLUTE_TIMER(ns):
    """A struct itimerspec (x86_64 and aarch64: four 64-bit fields) firing once at `ns`."""
    return bytes(16) + (ns // 1000000000).to_bytes(8, "little") + (ns % 1000000000).to_bytes(8, "little")


# The runner's deadline timer (exclusive mode): created by the zygote, armed by the child that takes
# a request (timerfd_settime on the shared open file), polled by the zygote.
TIMER_FD = -1


def read_file(path):
    """The bytes of a small file; None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    except OSError:
        return None
    finally:
        os.close(fd)


def ipc_ids(kind):
    """Ids of the SysV objects (shm, msg, sem) in this IPC namespace; None when unlistable."""
    data = read_file("/proc/sysvipc/" + kind)
    if data is None:
        return None
    return [int(r.split()[1]) for r in data.splitlines()[1:] if len(r.split()) > 1]


def remove_ipc():
    """Removes what an execution left in the sandbox's IPC namespace: SysV shared memory segments,
    message queues and semaphore sets (IPC_RMID; the runner has the uid that created them, and
    every process that could still use them is dead) and POSIX message queues (listed on the
    namespace's /dev/mqueue). Answers whether nothing is left; the caller ends the sandbox if not.
    A fresh IPC namespace per execution would need CAP_SYS_ADMIN, which the sandbox does not have."""
    rm = (("shm", lambda i: libc("shmctl", i, 0, None)), ("msg", lambda i: libc("msgctl", i, 0, None)), ("sem", lambda i: libc("semctl", i, 0, 0)))
    clean = True
    for kind, remove in rm:
        ids = ipc_ids(kind)
        for i in ids or ():
            remove(i)
        if ids and ipc_ids(kind):
            clean = False
    try:
        queues = os.listdir("/dev/mqueue")
    except OSError:
        queues = []
    for q in queues:
        libc("mq_unlink", ("/" + q).encode())
    if queues and os.listdir("/dev/mqueue"):
        clean = False
    return clean


# A request shaped like a common one, for the warm-up's rehearsal.
REHEARSAL = (
    b'{"op":"exec","id":"00000000-0000-4000-8000-000000000000","code":"def handler(input, context):\\n'
    b'    return {\\"echo\\": input, \\"n\\": 2.5}\\n","entrypoint":"handler","input":{"k":[1,"x",null,true]},'
    b'"context":{"user_id":"u"},"timeout_ms":30000,"name":"warm-up"}'
)


def warm_up(opts, capture=None):
    """Rehearses an execution while idle, through the same functions a request takes (reading the
    frame from a pipe, decoding, the start line, limits set to what they are, compiling, running,
    encoding, the output capture, the answer's assembly) but without writing anything: a forked
    child takes a copy-on-write page fault on the first write to every page it shares with the
    zygote (refcounts, allocator pools, the interpreter's static data, the stack), and those are
    taken now, not on the caller's time. On this kind of VM a fault costs 10-40 us of CPU."""
    if TIMER_FD >= 0:
        # the call that arms the deadline (disarming it: nothing is armed while idle)
        libc("timerfd_settime", TIMER_FD, 0, bytes(32), None)
    r, w = os.pipe()
    try:
        os.write(w, frame_head(len(REHEARSAL)) + REHEARSAL)
        req = take_request(r)
    finally:
        os.close(r)
        os.close(w)
    serve(opts, req, capture, None, None, fixed_set=capture is not None)


def take_request(fd):
    """The next request frame, decoded; None at the end of the stream."""
    head = read_exact(fd, 4)
    if head is None:
        return None
    n = int.from_bytes(head, "big")
    raw = read_exact(fd, n) if n <= RESULT_LIMIT else None
    if raw is None:
        return None
    return loads(raw)


def serve(opts, req, capture, status_w, proto_out, fixed_set=False):
    """Runs an exec request and writes its answer to `proto_out`; with no `proto_out` (the warm-up)
    it writes nothing anywhere and returns."""
    rid = req.get("id")
    try:
        timeout_ms = int(req.get("timeout_ms", 300000))
    except (TypeError, ValueError):
        timeout_ms = 300000
    # The deadline goes to the runner's timer (a timerfd it polls, shared through the fork: arming
    # it wakes nobody) and "<timeout ms> <id as JSON>\n" to the status pipe, which the runner
    # reads once this process is gone (for an answer it gives in its place). Then this process
    # lets go of the timer: no user code can disarm it.
    deadline = time.monotonic_ns() + max(1, timeout_ms) * 1000000
    rid_json = encode_id(rid)
    started = b"%d %s\n" % (timeout_ms, rid_json.encode())
    armed = ABSOLUTE_TIMER(deadline)
    if status_w is not None:
        os.write(status_w, started)
        libc("timerfd_settime", TIMER_FD, 1, armed, None)  # TFD_TIMER_ABSTIME
        os.close(TIMER_FD)
    data, secs = execute(opts, req, rehearsal=proto_out is None, fixed_set=fixed_set)
    out = ""
    if capture is not None:
        # Its size first, then one read of what there is (none, mostly): a read of OUTPUT_LIMIT
        # bytes allocates (and frees) a 64 KB buffer on every call, ~30 us here under load.
        size = os.fstat(capture).st_size
        if size > 0:
            out = os.pread(capture, min(size, OUTPUT_LIMIT), 0).decode("utf-8", "replace")
            if size > OUTPUT_LIMIT:
                out += "\n[output truncated: %d bytes dropped]" % (size - OUTPUT_LIMIT)
    parts = answer_parts(rid_json, out, data, secs)
    if proto_out is None:
        return
    # 'done' first: when this process is gone the runner knows it answered (and gives no answer of
    # its own); the runner reads it only then, so writing it wakes nobody.
    if status_w is not None:
        os.write(status_w, b"D")
    write_all(proto_out, parts)
    os._exit(0)


def encode_id(rid):
    """A request's id as JSON: the platform's ids are strings (no encoder object built for them)."""
    return _encode_str(rid) if type(rid) is str else dumps(rid, default=str)


def answer_parts(rid_json, output, data, secs):
    """The answer frame around the encoded {"ok": ...} body, as parts for one writev (the body is
    not copied again). `rid_json`: the id as JSON (encode_id)."""
    head = ('{"op":"result","id":%s,"output":%s,"duration_ms":%r,' % (rid_json, _encode_str(output), round(secs * 1000, 3))).encode()
    return [frame_head(len(head) + len(data) - 1), head, memoryview(data)[1:]]


def set_policy(batch):
    """SCHED_BATCH or back to SCHED_OTHER (an unprivileged process may switch between the two)."""
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH if batch else os.SCHED_OTHER, os.sched_param(0))
    except (AttributeError, OSError):
        pass


def set_nondumpable():
    """PR_SET_DUMPABLE 0: no process of the sandbox may open /proc/<runner>/fd/0 (the protocol pipe)
    or ptrace the runner, so a process left behind by one execution cannot read the next request."""
    try:
        if libc("prctl", 4, 0, 0, 0, 0) != 0 or libc("prctl", 3, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, PR_GET_DUMPABLE
            raise OSError("prctl(PR_SET_DUMPABLE, 0) failed")
    except Exception as e:  # without it the runner would be open to that read: refuse to run
        sys.stderr.write("runner: cannot make itself non-dumpable: %s\n" % e)
        sys.exit(3)


def direct_child(opts, status_w, proto_out):
    """An exclusive sandbox's executor process: answers pings, takes ONE exec request straight from
    the protocol pipe, gives up that pipe before any user code runs, writes its answer straight to
    the protocol output and exits. The platform talks to it with no relay in between."""
    # Everything that does not depend on the request is done while idle: the output capture (the
    # stream objects on fds 0-2 are the zygote's own, made once: see main_exclusive) and the
    # copy-on-write faults of an execution (warm_up). A request that is already waiting (a
    # single-use sandbox, a busy pool) is served at once: rehearsing first would cost more than
    # the faults it saves.
    capture = os.memfd_create("output", 0)
    os.dup2(capture, 1)
    os.dup2(capture, 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    if not select.select([0], [], [], 0)[0]:
        warm_up(opts, capture)
    set_fixed_limits(opts)
    # Ready: back to the normal policy (the runner's is SCHED_BATCH, see main_exclusive), so the
    # request's arrival wakes this process like any other.
    set_policy(False)
    while True:
        req = take_request(0)
        if req is None:
            os.write(status_w, b"X")
            os._exit(0)
        op = req.get("op")
        if op == "exec":
            break
        if op == "exit":
            os.write(status_w, b"X")
            os._exit(0)
        write_frame(proto_out, {"op": "pong", "id": req.get("id"), "running": 0} if op == "ping" else {"op": "error", "id": req.get("id"), "message": "unknown op %r" % op})
    # From here on nothing of this process (user code, anything it starts) can read requests.
    os.dup2(devnull, 0)
    os.close(devnull)
    serve(opts, req, capture, status_w, proto_out, fixed_set=True)


def drain(fd, limit=1 << 20):
    """What a non-blocking pipe holds now (at most `limit` bytes: processes a function left behind
    may hold the pipe and keep writing)."""
    chunks = []
    got = 0
    while got < limit:
        try:
            b = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            break
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def supervise(pid, pidfd, status_r):
    """Waits for the child forked for the next request: until it exits or the deadline it armed on
    TIMER_FD passes. Nothing wakes the runner while a request runs (its pages are copy-on-write
    shared with the child: every page it wrote meanwhile would cost a fault, and its wake-up takes
    a core from the call). Returns (started, answered, timed_out, exiting); `started` is
    (timeout_ms, id) once the child took a request."""
    timed_out = bool(select.select([pidfd, TIMER_FD], [], [])[0] == [TIMER_FD])
    # What the child wrote: "X" when it ends without a request; else "<timeout ms> <id>\n" (its
    # own, before any user code ran), then a 'done' when it answered (user code can write here
    # too, which can only cost it its own answer).
    status = drain(status_r)
    if not status.strip(b"X") and status:
        return None, False, False, True
    line, newline, rest = status.partition(b"\n")
    if not newline:
        return None, False, False, False
    timeout_ms, _, rid = line.partition(b" ")
    try:
        started = (int(timeout_ms), loads(rid))
    except ValueError:
        started = (0, None)
    return started, not timed_out and b"D" in rest, timed_out, False


def main_exclusive(opts):
    """One execution at a time, each in a fresh child that talks to the platform directly; between
    two executions every other process is killed and /tmp emptied (when isolated)."""
    proto_out = os.dup(1)
    os.dup2(2, 1)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # What every child needs the same of is made here once, not in each child: default SIGTERM and
    # SIGINT, and the stream objects on fds 0-2 (a child points fds 1 and 2 at its output capture
    # and fd 0 at /dev/null; here fd 1 is the runner's stderr).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    set_nondumpable()
    # The runner's own work (cleaning up after an execution, forking, and a child's warm-up until it
    # is ready) runs under SCHED_BATCH: it starts right after an answer, when the platform's
    # process wakes to take that answer, and a batch task does not preempt on wake-up.
    set_policy(True)
    global TIMER_FD
    TIMER_FD = libc("timerfd_create", 1, os.O_NONBLOCK | os.O_CLOEXEC)  # CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC
    if TIMER_FD < 0:
        sys.stderr.write("runner: timerfd_create failed\n")
        sys.exit(3)
    write_frame(proto_out, {"op": "ready", "pid": os.getpid(), "python": sys.version.split()[0], "mode": "exclusive"})
    # The runner rehearses a request once itself (a constant one: no user code). What the first
    # compile() of a process sets up (the parser's and compiler's own state: ~1.5 ms of CPU here,
    # against ~0.1 ms for a later compile) is then done once for the sandbox and inherited by
    # every child, instead of being done again in each child's warm-up after each answer.
    warm_up(opts)
    disarmed = bytes(32)
    while True:
        # the previous child's deadline, if one was armed, is over
        libc("timerfd_settime", TIMER_FD, 0, disarmed, None)
        try:
            os.read(TIMER_FD, 8)
        except BlockingIOError:
            pass
        status_r, status_w = os.pipe()
        # Nothing the runner holds now is ever collected in a child: a collection there would walk
        # (and so write, and copy) every page of the runner's objects.
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(status_r)
                direct_child(opts, status_w, proto_out)
            finally:
                os._exit(70)
        os.close(status_w)
        pidfd = os.pidfd_open(pid)
        os.set_blocking(status_r, False)
        started, answered, timed_out, exiting = supervise(pid, pidfd, status_r)
        os.close(status_r)
        os.close(pidfd)
        try:
            os.kill(pid, signal.SIGKILL)  # a no-op for a child that exited (not yet reaped)
        except ProcessLookupError:
            pass
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = 0
        if exiting:
            return
        if started is not None and (not answered or timed_out):
            if timed_out:
                err = {"type": "TimeoutError", "message": "the function ran longer than its timeout of %g s" % (started[0] / 1000.0), "traceback": ""}
            else:
                how = "was killed by signal %d%s" % (os.WTERMSIG(status), " (CPU time limit)" if os.WTERMSIG(status) == signal.SIGXCPU else " (memory or process limit)" if os.WTERMSIG(status) == signal.SIGKILL else "") if os.WIFSIGNALED(status) else "exited with code %d" % os.WEXITSTATUS(status)
                err = {"type": "ProcessDied", "message": "the function's process %s before it returned a result" % how, "traceback": ""}
            write_frame(proto_out, {"op": "result", "id": started[1], "output": "", "ok": False, "timed_out": timed_out, "error": err})
        kill_others(opts["isolated"])
        if opts["isolated"]:
            wipe("/tmp")
            wipe("/dev/shm")
            if not remove_ipc():
                # something of this execution could reach the next one: end the sandbox instead
                sys.stderr.write("runner: IPC objects of an execution could not be removed; exiting\n")
                return


def main_single_use(opts):
    """--single-use: this sandbox runs one execution and is destroyed after it (SANDBOX_EXECUTOR=
    single_use), so the runner runs it in its own process. No child is forked: after a fork every
    page the execution writes is a copy-on-write fault (about 500 for a small function, several ms
    on this kind of VM), and there is no next execution to clean up for or to protect from (no
    non-dumpable, no kill/wipe/IPC sweep). The runner exits after its answer and the whole
    sandbox with it. The platform enforces the time limit (it destroys the sandbox: channel.ts
    execOnce) and reports a runner that dies before answering as ProcessDied; the CPU rlimit
    stays as a backstop."""
    proto_out = os.dup(1)
    os.dup2(2, 1)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    write_frame(proto_out, {"op": "ready", "pid": os.getpid(), "python": sys.version.split()[0], "mode": "single_use"})
    while True:
        req = take_request(0)
        if req is None:
            return
        op = req.get("op")
        if op == "exec":
            break
        if op == "exit":
            return
        write_frame(proto_out, {"op": "pong", "id": req.get("id"), "running": 0} if op == "ping" else {"op": "error", "id": req.get("id"), "message": "unknown op %r" % op})
    # The function gets no way back to the protocol input; what it prints is captured.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    capture = os.memfd_create("output", 0)
    os.dup2(capture, 1)
    os.dup2(capture, 2)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    serve(opts, req, capture, None, proto_out)


def main():
    opts = parse_args(sys.argv[1:])
    if opts["packages"]:
        sys.path.insert(0, opts["packages"])
    if opts["single_use"]:
        return main_single_use(opts)
    if opts["mode"] == "exclusive":
        return main_exclusive(opts)
    import selectors

    proto_in, proto_out = 0, os.dup(1)
    # Anything the runner itself prints must not corrupt the protocol stream.
    os.dup2(2, 1)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    exclusive = opts["mode"] == "exclusive"
    sel = selectors.DefaultSelector()
    sel.register(proto_in, selectors.EVENT_READ, ("proto", None))
    running = {}
    spare = Child(opts, (proto_in, proto_out))
    write_frame(proto_out, {"op": "ready", "pid": os.getpid(), "python": sys.version.split()[0], "mode": opts["mode"]})
    inbuf = bytearray()
    paused = False

    def drain_output(child):
        while child.out_open:
            try:
                more = os.read(child.out_r, 65536)
            except BlockingIOError:
                return
            except OSError:
                more = b""
            if not more:
                sel.unregister(child.out_r)
                child.out_open = False
                return
            room = max(0, OUTPUT_LIMIT - len(child.output))
            child.output.extend(more[:room])
            child.output_dropped += len(more) - min(room, len(more))

    def parse_result(child):
        buf = bytes(child.result_buf)
        if len(buf) >= 12:
            n = int.from_bytes(buf[:4], "big")
            if len(buf) == 4 + n + 8:
                try:
                    outcome = loads(buf[4 : 4 + n])
                    secs = int.from_bytes(buf[4 + n :], "big") / 1e9
                    if isinstance(outcome, dict) and isinstance(outcome.get("ok"), bool):
                        outcome["duration_ms"] = round(secs * 1000, 3)
                        if not outcome["ok"] and not isinstance(outcome.get("error"), dict):
                            outcome["error"] = {"type": "BadResult", "message": "malformed error", "traceback": ""}
                        return outcome
                except ValueError:
                    pass
        return {"ok": False, "error": {"type": "BadResult", "message": "the function's process wrote a malformed result", "traceback": ""}}

    def finish(child, outcome):
        nonlocal spare, paused
        if child.res_open:
            sel.unregister(child.res_r)
            child.res_open = False
        drain_output(child)
        if child.out_open:
            sel.unregister(child.out_r)
            child.out_open = False
        del running[child.pid]
        out = child.output.decode("utf-8", "replace")
        if child.output_dropped:
            out += "\n[output truncated: %d bytes dropped]" % child.output_dropped
        frame = {"op": "result", "id": child.request.get("id"), "output": out}
        frame.update(outcome)
        # answer first: reaping the child and cleaning up happen while the caller goes on
        write_frame(proto_out, frame)
        if not getattr(child, "reaped", False):
            try:
                os.kill(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(child.pid, 0)
            except ChildProcessError:
                pass
        child.close_fds()
        if exclusive and opts["isolated"]:
            # only inside a sandbox's own pid and mount namespaces: these are its private /tmp and processes
            kill_others(True)
            wipe("/tmp")
            wipe("/dev/shm")
            if not remove_ipc():
                sys.stderr.write("runner: IPC objects of an execution could not be removed; exiting\n")
                raise SystemExit(3)
        if spare is None:
            spare = Child(opts, (proto_in, proto_out))
        if paused:
            sel.register(proto_in, selectors.EVENT_READ, ("proto", None))
            paused = False
            pump()

    def died(child):
        try:
            pid, status = os.waitpid(child.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = child.pid, 0
        if pid == 0:
            time.sleep(0.005)
            try:
                pid, status = os.waitpid(child.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = child.pid, 0
        how = "exited"
        if pid != 0:
            child.reaped = True
        if pid != 0 and os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            how = "was killed by signal %d%s" % (sig, " (CPU time limit)" if sig == signal.SIGXCPU else " (memory or process limit)" if sig == signal.SIGKILL else "")
        elif pid != 0:
            how = "exited with code %d" % os.WEXITSTATUS(status)
        return how

    def handle_request(req, raw):
        nonlocal spare, paused
        op = req.get("op")
        if op == "ping":
            write_frame(proto_out, {"op": "pong", "id": req.get("id"), "running": len(running)})
            return
        if op == "exit":
            raise SystemExit(0)
        if op != "exec":
            write_frame(proto_out, {"op": "error", "id": req.get("id"), "message": "unknown op %r" % op})
            return
        child = spare
        spare = None
        child.request = req
        child.started = time.monotonic()
        child.deadline = child.started + max(0.001, req.get("timeout_ms", 300000) / 1000.0)
        running[child.pid] = child
        sel.register(child.res_r, selectors.EVENT_READ, ("res", child))
        sel.register(child.out_r, selectors.EVENT_READ, ("out", child))
        try:
            # the frame as received: one write, no re-encoding
            view = memoryview(raw)
            while view:
                view = view[os.write(child.req_w, view):]
        except BrokenPipeError:
            pass
        if exclusive:
            # one at a time: the next request waits in the pipe until this one is cleaned up
            sel.unregister(proto_in)
            paused = True
        else:
            spare = Child(opts, (proto_in, proto_out))

    def pump():
        while len(inbuf) >= 4 and not paused:
            n = int.from_bytes(inbuf[:4], "big")
            if len(inbuf) < 4 + n:
                break
            raw = bytes(inbuf[: 4 + n])
            del inbuf[: 4 + n]
            handle_request(loads(raw[4:]), raw)

    while True:
        timeout = None
        if running:
            timeout = max(0.0, min(c.deadline for c in running.values()) - time.monotonic())
        events = sel.select(timeout)
        now = time.monotonic()
        for key, _ in events:
            kind, child = key.data
            if kind == "proto":
                chunk = os.read(proto_in, 1 << 20)
                if not chunk:
                    return
                inbuf.extend(chunk)
                pump()
            elif child.pid not in running:
                continue
            elif kind == "out":
                drain_output(child)
            else:
                chunk = os.read(child.res_r, 1 << 20)
                if chunk:
                    child.result_buf.extend(chunk)
                    buf = child.result_buf
                    if len(buf) > RESULT_LIMIT + 12:
                        finish(child, {"ok": False, "error": {"type": "ResultTooLarge", "message": "the result is too large", "traceback": ""}})
                    elif len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:4], "big") + 8:
                        finish(child, parse_result(child))
                    continue
                # EOF before a whole frame: the process died (or closed the pipe) without answering
                outcome = parse_result(child)
                if outcome["error"]["type"] == "BadResult" and not child.result_buf:
                    how = died(child)
                    outcome = {"ok": False, "error": {"type": "ProcessDied", "message": "the function's process %s before it returned a result" % how, "traceback": ""}}
                finish(child, outcome)
        for child in list(running.values()):
            if now >= child.deadline and child.pid in running:
                secs = child.request.get("timeout_ms", 0) / 1000.0
                finish(child, {"ok": False, "timed_out": True, "error": {"type": "TimeoutError", "message": "the function ran longer than its timeout of %g s" % secs, "traceback": ""}})


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        pass
    except BrokenPipeError:
        pass
