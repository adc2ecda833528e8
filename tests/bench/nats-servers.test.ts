import t from 'tap'
import {
  CURRENT_NATS_DEFAULT,
  DEBIAN_NATS,
  natsBinaries,
  natsOption,
  versionAtLeast,
} from '../../bench/lib/nats-servers.ts'

/*
 * The bench runner's server choice: `--nats=` (or BENCH_NATS) is taken out of the benchmark names,
 * and names the binaries the NATS-bound benchmarks run on, in order, each once.
 */
t.test('--nats= is an option, not a benchmark name; the last one wins over BENCH_NATS', async (t) => {
  t.same(natsOption(['queue', '--nats=both', 'actors'], {}), { spec: 'both', names: ['queue', 'actors'] })
  t.same(natsOption(['queue'], { BENCH_NATS: 'debian' }), { spec: 'debian', names: ['queue'] })
  t.same(natsOption(['--nats=current'], { BENCH_NATS: 'debian' }), { spec: 'current', names: [] })
  t.same(natsOption([], { BENCH_NATS: '' }), { spec: undefined, names: [] })
})

t.test('current, debian, both and paths name binaries', async (t) => {
  t.same(natsBinaries('both', {}), [CURRENT_NATS_DEFAULT, DEBIAN_NATS])
  t.same(natsBinaries('current', { BENCH_NATS_CURRENT: '/opt/nats' }), ['/opt/nats'])
  t.same(natsBinaries('debian,both', {}), [DEBIAN_NATS, CURRENT_NATS_DEFAULT], 'each once')
  t.same(natsBinaries('/x/nats-server', {}), ['/x/nats-server'])
})

t.test('versions compare by their numbers', async (t) => {
  t.ok(versionAtLeast('2.15.3', '2.12.0'))
  t.ok(versionAtLeast('2.12.0', '2.12.0'))
  t.notOk(versionAtLeast('2.9.10', '2.11.0'))
  t.ok(versionAtLeast('2.10.0', '2.9.10'))
})
