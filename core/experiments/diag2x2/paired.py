# Paired differences of the 2×2 (experiments/diag2x2/run.sh) over the same test tasks, with bootstrap intervals.
import json, random, collections, sys
def per_task(name):
    t = collections.defaultdict(list)
    for l in open(f'tr-{name}.jsonl'):
        d = json.loads(l); t[d['task_id']].append(d['reward'])
    return {k: sum(v)/len(v) for k, v in t.items()}
def diff(a, b, c=None, d=None, B=4000):
    A, Bt = per_task(a), per_task(b)
    C = per_task(c) if c else None; D = per_task(d) if d else None
    tasks = sorted(A)
    def val(ts):
        s = sum(Bt[x] - A[x] for x in ts)
        if C: s -= sum(D[x] - C[x] for x in ts)
        return 100 * s / len(ts)
    pt = val(tasks); rng = random.Random(1); bs = sorted(val([rng.choice(tasks) for _ in tasks]) for _ in range(B))
    return '%+.1f [%+.1f, %+.1f]' % (pt, bs[int(.025*B)], bs[int(.975*B)])
for dom, s in (('math', 'own'), ('sq', 's6')):
    print(dom)
    print(' harness gain, base   ', diff(f'{dom}-base-h0', f'{dom}-base-{s}'))
    print(' harness gain, trained', diff(f'{dom}-wo-h0', f'{dom}-wo-{s}'))
    print(' vote4 gain, base     ', diff(f'{dom}-base-h0', f'{dom}-base-v4'))
    print(' vote4 gain, trained  ', diff(f'{dom}-wo-h0', f'{dom}-wo-v4'))
    print(' weight gain, h0      ', diff(f'{dom}-base-h0', f'{dom}-wo-h0'))
    print(' weight gain, searched', diff(f'{dom}-base-{s}', f'{dom}-wo-{s}'))
    print(' both vs best single  ', diff(f'{dom}-base-{s}', f'{dom}-wo-{s}'))
    print(' interaction (trained gain − base gain)', diff(f'{dom}-wo-h0', f'{dom}-wo-{s}', f'{dom}-base-h0', f'{dom}-base-{s}'))
    print(' searched − vote4, base', diff(f'{dom}-base-v4', f'{dom}-base-{s}'))
