import t from 'tap'
import { startTestPlatform, type TestPlatform } from '../helpers/env.ts'

/*
 * The executor settings end to end through the gateway: TRUSTED_EXECUTOR=inprocess (a trusted
 * function runs in a Python child of the worker process itself, no sandbox), input() refused in
 * both kinds of function with a clear error instead of a hang, MAX_FUNCTION_STORAGE as the disk
 * quota of one execution (all its files together), and SANDBOX_EXECUTOR=disabled (an untrusted
 * execution is refused with a clear error; trusted ones still run).
 */
type Run = { status: string; result: unknown; error: string | null }

async function mk(env: TestPlatform, name: string, code: string, extra: Record<string, unknown> = {}): Promise<void> {
  const r = await env.request('POST', '/api/v1/functions', { body: { namespace: 'exe', name, code, ...extra } })
  if (r.status !== 201) throw new Error(r.text)
}
const run = async (env: TestPlatform, name: string, input: unknown = {}) => {
  const r = await env.request('POST', `/functions/exe/${name}/execute`, { body: { input } })
  return { http: r.status, ...(r.body as Run), body: r.body }
}

t.test('TRUSTED_EXECUTOR=inprocess, input() and MAX_FUNCTION_STORAGE', async (t) => {
  const env = await startTestPlatform(t, { TRUSTED_EXECUTOR: 'inprocess', MAX_FUNCTION_STORAGE: '2m' })
  // its ancestry as it sees it: pids and command lines up to pid 1 of its pid namespace
  await mk(
    env,
    'where',
    [
      'import os',
      'def handler(event, context):',
      '    chain, pid = [], os.getpid()',
      '    while pid > 1:',
      '        with open("/proc/%d/cmdline" % pid, "rb") as f:',
      '            cmd = f.read().replace(b"\\0", b" ").decode()',
      '        with open("/proc/%d/stat" % pid) as f:',
      '            stat = f.read()',
      '        chain.append([pid, cmd])',
      '        pid = int(stat[stat.rindex(")") + 2:].split(" ")[1])',
      '    return {"chain": chain, "env": sorted(os.environ)}',
    ].join('\n') + '\n',
    { shared_pool: true },
  )
  // the parameter is not called `input`, which would hide the builtin
  await mk(env, 'asks', 'def handler(event, context):\n    return input("your name? ")\n', { timeout: 60 })
  await mk(env, 'asks-trusted', 'def handler(event, context):\n    return input("your name? ")\n', {
    timeout: 60,
    shared_pool: true,
  })
  await mk(
    env,
    'fills',
    [
      'import errno',
      'def handler(input, context):',
      '    done = []',
      '    for name, mb in input["files"]:',
      '        try:',
      '            with open("/tmp/" + name, "wb") as f:',
      '                f.write(b"x" * int(mb * 1024 * 1024))',
      '            done.append([name, "ok"])',
      '        except OSError as e:',
      '            done.append([name, errno.errorcode.get(e.errno, str(e.errno))])',
      '    return done',
    ].join('\n') + '\n',
  )

  await t.test('a trusted function runs in a Python child of the worker process', async (t) => {
    const r = await run(env, 'where')
    t.equal(r.status, 'success', JSON.stringify(r.body))
    const chain = (r.result as { chain: [number, string][] }).chain
    // the platform runs in this test process: a sandbox's own pid namespace would hide it
    t.ok(
      chain.some(([pid]) => pid === process.pid),
      `the worker process ${String(process.pid)} is among its ancestors`,
    )
    t.notOk(
      chain.some(([, cmd]) => cmd.includes('bwrap')),
      'no bubblewrap around it',
    )
    t.notOk(
      (r.result as { env: string[] }).env.some((k) =>
        ['SECRET_KEY', 'ENCRYPTION_KEY', 'DATABASE_URL', 'NATS_URL'].includes(k),
      ),
      "none of the platform's settings in its environment",
    )
  })

  await t.test('input() answers a clear error at once, in a sandbox and in process', async (t) => {
    for (const name of ['asks', 'asks-trusted']) {
      const started = Date.now()
      const r = await run(env, name)
      t.equal(r.status, 'error', `${name}: an error, not a timeout (${JSON.stringify(r.body)})`)
      t.match(r.error, /input\(\) is not supported in functions/, `${name}: says why`)
      t.ok(Date.now() - started < 30_000, `${name}: long before the function's 60 s timeout`)
    }
  })

  await t.test('MAX_FUNCTION_STORAGE is a quota of all the files of an execution', async (t) => {
    const two = await run(env, 'fills', {
      files: [
        ['a', 1.2],
        ['b', 1.2],
      ],
    })
    t.equal(two.status, 'success', JSON.stringify(two.body))
    t.same(
      two.result,
      [
        ['a', 'ok'],
        ['b', 'ENOSPC'],
      ],
      'the second 1.2 MB file does not fit in 2 MB',
    )
    const one = await run(env, 'fills', { files: [['c', 3]] })
    t.notSame(one.result, [['c', 'ok']], 'nor one 3 MB file')
    const after = await run(env, 'fills', { files: [['d', 1.5]] })
    t.same(after.result, [['d', 'ok']], 'the next execution starts with an empty /tmp')
  })
})

t.test('SANDBOX_EXECUTOR=disabled refuses untrusted executions with a clear error', async (t) => {
  const env = await startTestPlatform(t, { SANDBOX_EXECUTOR: 'disabled' })
  await mk(env, 'plain', 'def handler(input, context):\n    return 1\n')
  await mk(env, 'trusted', 'def handler(input, context):\n    return 2\n', { shared_pool: true })
  const r = await run(env, 'plain')
  t.not(r.status, 'success', JSON.stringify(r.body))
  t.match(
    JSON.stringify(r.body),
    /sandbox executions are disabled on this platform \(SANDBOX_EXECUTOR=disabled\)/,
    'the error names the setting',
  )
  t.equal(r.http, 422, 'refused before it is queued')
  t.match(r.body, { code: 'sandbox.disabled' })
  const later = await env.request('POST', '/functions/exe/plain/execute/async', { body: { input: {} } })
  t.equal(later.status, 422, 'asynchronous ones too')
  const trusted = await run(env, 'trusted')
  t.same([trusted.status, trusted.result], ['success', 2], 'a trusted shared_pool function still runs')
})
