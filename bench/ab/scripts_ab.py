"""A/B of the claim, done and backfeed scripts of two git revisions, measured inside Redis.

Usage: pip install redis; python3 bench/ab/scripts_ab.py OLD_REV [NEW_REV]   (NEW_REV: the work tree)

Runs both versions against one private redis-server, interleaved, 3 rounds, and prints the median
items (or records) per second of Redis time spent in EVALSHA (INFO commandstats), so the client's
own cost and the machine's other load count far less than in wall-clock figures.
"""
import os, statistics, sys, time
from common import private_redis, source
OLD = sys.argv[1] if len(sys.argv) > 1 else 'HEAD~1'
NEW = sys.argv[2] if len(sys.argv) > 2 else None
p, r = private_redis()
REVS = {'old': OLD, 'new': NEW}
def load(v,name): return r.script_load(source(REVS[v], '_lib') + '\n' + source(REVS[v], name))
S={v:{n:load(v,n) for n in ['claim','done','backfeed']} for v in ['old','new']}
def pk(slug,n): return f't:{{{slug}}}:{n}'
def setup(slug, n):
    r.hset(pk(slug,'meta'), mapping={'title':slug,'state':'active','domains':'data','queues':'todo,todo:backfeed,todo:secondary,todo:redo','shuffled':'1'})
    pipe=r.pipeline(transaction=False)
    for i in range(0,n,10000):
        pipe.zadd(pk(slug,'todo'), {f'{slug}-{j}':j for j in range(i,min(n,i+10000))})
    pipe.execute()
def claim(v,slug,reqs):
    K=[pk(slug,x) for x in ['meta','out','claims','attempts','failed','dl:claims','blocked:ip','blocked:dl','ratelimit','timeline','stats']]
    A=[int(time.time()*1000),pk(slug,''),len(reqs)]
    for d,n in reqs: A+= [d,'1.2.3.4','Wget/1.0 Warrior','20240101',n,'1','0']
    return r.evalsha(S[v]['claim'],len(K),*K,*A)
def done(v,slug,reps):
    K=[pk(slug,x) for x in ['meta','out','claims','done','failed','attempts','dl:claims','stats','dl:items','dl:bytes','dl:version','dl:seen','domain_bytes','seq','history','events','timeline','blocked:ip','log','chart']]
    A=[int(time.time()*1000),pk(slug,''),2000,100000,len(reps)]
    for d,items in reps: A+=[d,'20240101','Wget/1.0 Warrior','1.2.3.4','null',1,'data',1234,len(items)]+items
    return r.evalsha(S[v]['done'],len(K),*K,*A)
def parse(flat):
    out=[];i=0
    while i<len(flat):
        c,n=flat[i],flat[i+1]; i+=2
        if c==200: out.append([x.decode() for x in flat[i:i+n]]); i+=n
        else: out.append([])
    return out
def rtime():
    st=r.info('commandstats')
    return sum(x['usec'] for k,x in st.items() if k in ('cmdstat_evalsha',))/1e6
def pairs(v,slug,R,n,iters):
    t=rtime(); cnt=0
    for it in range(iters):
        reqs=[(f'dl{k}',n) for k in range(R)]
        got=parse(claim(v,slug,reqs))
        done(v,slug,[(f'dl{k}',g) for k,g in enumerate(got) if g])
        cnt+=sum(len(g) for g in got)
    return cnt/(rtime()-t)
def backfeed(v,slug,iters,base):
    K=[pk(slug,x) for x in ['meta','out','done','failed','bloom','qseq']]
    t=rtime(); cnt=0
    for it in range(iters):
        A=[int(time.time()*1000),pk(slug,''),'todo:backfeed',0,'10000000 664063 20;20000000 1400000 21']
        for j in range(1000):
            h=hash((v,base,it,j)) & ((1<<52)-1)
            A+=[h,'',f'bf-{base}-{it}-{j}']
        r.evalsha(S[v]['backfeed'],len(K),*K,*A); cnt+=1000
    return cnt/(rtime()-t)
# Since the filter's bit work moved to the tracker (store/bloom.rs), backfeed.lua takes the
# blocks it decided, not hashes: it can only be compared with itself in the tracker, by
# `target/release/bench --phases backfeed`.
OLD_FILTER_IN_LUA = all('ARGV[6 ..] triples: hash' in source(REVS[v], 'backfeed') for v in REVS)
res={}
for rnd in range(3):
    for v in ['old','new']:
        s=f'{v}{rnd}'
        setup(s+'a',20000); setup(s+'b',60000); setup(s+'c',10)
        res.setdefault((v,'pairs R=16'),[]).append(pairs(v,s+'a',16,1,300))
        res.setdefault((v,'pairs R=1'),[]).append(pairs(v,s+'a',1,1,1000))
        res.setdefault((v,'multi100 R=1'),[]).append(pairs(v,s+'b',1,100,150))
        res.setdefault((v,'multi100 R=4'),[]).append(pairs(v,s+'b',4,100,30))
        if OLD_FILTER_IN_LUA: res.setdefault((v,'backfeed 1000'),[]).append(backfeed(v,s+'c',20,rnd))
for k in sorted(set(x[1] for x in res)):
    o=statistics.median(res[('old',k)]); n=statistics.median(res[('new',k)])
    print(f'{k:16s} old {o:9.0f}/s  new {n:9.0f}/s  ratio {n/o:5.2f}')
print(f'# python3 bench/ab/scripts_ab.py {OLD} {NEW or ""}  (old = {OLD}, new = {NEW or "work tree"})')
p.terminate()
