# Tables of the 2×2 (experiments/diag2x2/run.sh): one row per cell from its eval JSON and trace.
import json, re, sys, os
ANS = re.compile(r"<answer>(.*?)</answer>", re.S)
def kept(trace):
    eps = correct = extra = 0
    for l in open(trace):
        d = json.loads(l); eps += 1
        if d['reward'] != 1: continue
        correct += 1
        turns = {}
        for c in d['calls']:
            k = c['key'].split('/')
            turn = '/'.join(k[:3]) if len(k) >= 3 else c['key']
            turns.setdefault(turn, []).append(c)
        # the final turn: the one holding the chosen 'answer' call
        for t, cs in turns.items():
            ch = [c for c in cs if c.get('outcome') == 'answer']
            if not ch: continue
            m = ANS.search(ch[0]['text'] or '')
            if not m: continue
            seen = {ch[0]['text']}
            for c in cs:
                if c.get('not_chosen') and c['text'] not in seen:
                    mm = ANS.search(c['text'] or '')
                    if mm and mm.group(1).strip() == m.group(1).strip():
                        extra += 1; seen.add(c['text'])
    return eps, correct, extra
rows = []
for name in sys.argv[1:]:
    e = json.load(open(f'ev-{name}.json'))
    eps, correct, extra = kept(f'tr-{name}.jsonl')
    calls = e['policy_calls']
    rows.append((name, e['mean_at_k']*100, e['ci95'][0]*100, e['ci95'][1]*100, e['maj_at_k']*100, e['pass_at_k']*100,
                 calls/e['rollouts'], correct/calls, (correct+extra)/calls, e['seconds']))
print('| cell | mean@8 [95 % CI] | maj@8 | pass@8 | calls / episode | kept / call (chosen only) | kept / call (every agreeing sample) | s |')
print('|---|---:|---:|---:|---:|---:|---:|---:|')
for r in rows:
    print('| %s | %.1f [%.1f, %.1f] | %.1f | %.1f | %.2f | %.3f | %.3f | %.0f |' % r)
