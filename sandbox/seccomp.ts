/*
 * The system calls a sandbox may not make, and two encodings of that one list: a classic BPF
 * program for bubblewrap (`--seccomp FD` reads an array of `struct sock_filter`) and a Docker /
 * podman seccomp profile (JSON). There is no libseccomp binding for Node, and the program is small
 * enough to assemble here.
 *
 * Why these: every capability is dropped already, so what is left are the calls an unprivileged
 * process may still make that reach beyond its own execution: ptrace and process_vm_readv/writev
 * (read or steer pid 1, the runner, a process of the next execution; this kernel has no Yama),
 * a new user namespace (unshare / clone with CLONE_NEWUSER: capabilities again, inside it) and
 * setns, the kernel keyrings (keys outlive the process and are shared by the uid), bpf,
 * perf_event_open (side channels), userfaultfd (stalling the kernel in a race) and io_uring (its
 * operations bypass this filter; Docker's default profile refuses it too). clone3 passes
 * its flags in memory a filter cannot read: it answers ENOSYS, and libc falls back to clone, whose
 * flags are checked.
 */

/** Syscall numbers per architecture (x86_64: arch/x86/entry/syscalls; aarch64: asm-generic). */
const DENIED: Record<'x86_64' | 'aarch64', Record<string, number>> = {
  x86_64: {
    ptrace: 101,
    process_vm_readv: 310,
    process_vm_writev: 311,
    unshare: 272,
    setns: 308,
    keyctl: 250,
    add_key: 248,
    request_key: 249,
    bpf: 321,
    perf_event_open: 298,
    userfaultfd: 323,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
  },
  aarch64: {
    ptrace: 117,
    process_vm_readv: 270,
    process_vm_writev: 271,
    unshare: 97,
    setns: 268,
    keyctl: 219,
    add_key: 217,
    request_key: 218,
    bpf: 280,
    perf_event_open: 241,
    userfaultfd: 282,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
  },
}
const CLONE = { x86_64: 56, aarch64: 220 }
const CLONE3 = 435 // the same number on both
export const DENIED_SYSCALLS: readonly string[] = Object.keys(DENIED.x86_64)

const AUDIT_ARCH = { x86_64: 0xc000003e, aarch64: 0xc00000b7 }
/** x32 syscalls on x86_64 carry this bit: they would reach the same kernel code under other numbers. */
const X32_SYSCALL_BIT = 0x40000000
export const CLONE_NEWUSER = 0x10000000
const EPERM = 1
const ENOSYS = 38

// classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const JSET_K = 0x45
const RET_K = 0x06
const RET_ALLOW = 0x7fff0000
const RET_ERRNO = 0x00050000
// offsets in struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64)
const OFF_NR = 0
const OFF_ARCH = 4
const OFF_ARG0_LOW = 16 // little-endian on both architectures: the low half comes first

type Target = 'allow' | 'deny' | 'enosys' | 'clone' | 'aarch64' | 'foreign'
type Insn = { code: number; k: number; jt?: Target; jf?: Target } | { label: Target }

/** The filter: per architecture, the denied numbers answer EPERM; any other architecture's calls
 * (i386 through int 0x80 on x86_64) answer EPERM entirely. */
export function seccompProgram(): Buffer {
  const prog: Insn[] = [
    { code: LD_W_ABS, k: OFF_ARCH },
    { code: JEQ_K, k: AUDIT_ARCH.x86_64, jf: 'aarch64' },
  ]
  const body = (arch: 'x86_64' | 'aarch64'): Insn[] => [
    { code: LD_W_ABS, k: OFF_NR },
    ...(arch === 'x86_64' ? [{ code: JGE_K, k: X32_SYSCALL_BIT, jt: 'deny' as const }] : []),
    ...Object.values(DENIED[arch]).map((nr) => ({ code: JEQ_K, k: nr, jt: 'deny' as const })),
    { code: JEQ_K, k: CLONE3, jt: 'enosys' },
    { code: JEQ_K, k: CLONE[arch], jt: 'clone', jf: 'allow' },
  ]
  prog.push(...body('x86_64'))
  prog.push({ label: 'aarch64' }, { code: JEQ_K, k: AUDIT_ARCH.aarch64, jf: 'foreign' }, ...body('aarch64'))
  prog.push(
    { label: 'clone' },
    { code: LD_W_ABS, k: OFF_ARG0_LOW },
    { code: JSET_K, k: CLONE_NEWUSER, jt: 'deny', jf: 'allow' },
  )
  prog.push({ label: 'allow' }, { code: RET_K, k: RET_ALLOW })
  prog.push({ label: 'foreign' }, { label: 'deny' }, { code: RET_K, k: RET_ERRNO | EPERM })
  prog.push({ label: 'enosys' }, { code: RET_K, k: RET_ERRNO | ENOSYS })
  return assemble(prog)
}

/** Resolves labels to the relative forward jumps of classic BPF and encodes `struct sock_filter`s. */
function assemble(prog: Insn[]): Buffer {
  const at = new Map<Target, number>()
  const code: { code: number; k: number; jt?: Target; jf?: Target }[] = []
  for (const i of prog) {
    if ('label' in i) at.set(i.label, code.length)
    else code.push(i)
  }
  const out = Buffer.alloc(code.length * 8)
  code.forEach((i, n) => {
    const rel = (t: Target | undefined): number => {
      if (t === undefined) return 0
      const to = at.get(t)
      if (to === undefined || to <= n || to - n - 1 > 255) throw new Error(`seccomp: bad jump to ${t}`)
      return to - n - 1
    }
    out.writeUInt16LE(i.code, n * 8)
    out.writeUInt8(rel(i.jt), n * 8 + 2)
    out.writeUInt8(rel(i.jf), n * 8 + 3)
    out.writeUInt32LE(i.k >>> 0, n * 8 + 4)
  })
  return out
}

/**
 * The same list as a Docker seccomp profile (`SecurityOpt: ["seccomp=<json>"]`, accepted by
 * Docker and podman). It allows by default: it replaces the engine's default profile, whose
 * allowlist mostly guards calls that need capabilities, and the container has none.
 */
export function dockerSeccompProfile(): string {
  return JSON.stringify({
    defaultAction: 'SCMP_ACT_ALLOW',
    architectures: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32', 'SCMP_ARCH_AARCH64', 'SCMP_ARCH_ARM'],
    syscalls: [
      { names: [...DENIED_SYSCALLS], action: 'SCMP_ACT_ERRNO', errnoRet: EPERM },
      {
        names: ['clone'],
        action: 'SCMP_ACT_ERRNO',
        errnoRet: EPERM,
        args: [{ index: 0, value: CLONE_NEWUSER, valueTwo: CLONE_NEWUSER, op: 'SCMP_CMP_MASKED_EQ' }],
      },
      { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS },
    ],
  })
}
