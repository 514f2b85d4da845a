// The Node.js cases of preload_cases.sh and vma_runtimes.sh, on Node's own
// http module (libuv: epoll, non-blocking sockets, writev).
//   node node_http.js server HOST PORT FILE   prints "ready"; GET: FILE,
//     POST: "LENGTH SHA256" of the body; until killed
//   node node_http.js cluster HOST PORT FILE   the server in 2 workers of
//     Node's cluster module: its primary accepts each connection and
//     passes it to a worker (SCM_RIGHTS); "ready" once both listen
//   node node_http.js client HOST PORT FILE N   N GETs (4 kept-alive
//     connections) each checked against FILE, then FILE POSTed; prints
//     "gets N ok" and "post ok"
'use strict';
const cluster = require('cluster');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');

const [mode, host, port, file, n] = process.argv.slice(2);
const body = fs.readFileSync(file);
const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');

if (mode === 'cluster' && cluster.isPrimary) {
  cluster.schedulingPolicy = cluster.SCHED_RR;  // the primary accepts (Linux's default)
  let listening = 0;
  cluster.on('listening', () => { if (++listening === 2) console.log('ready'); });
  for (let i = 0; i < 2; i++) cluster.fork();
} else if (mode === 'server' || mode === 'cluster') {
  http.createServer((req, res) => {
    if (req.method !== 'POST') return res.end(body);
    const h = crypto.createHash('sha256');
    let len = 0;
    req.on('data', (c) => { len += c.length; h.update(c); });
    req.on('end', () => res.end(`${len} ${h.digest('hex')}`));
  }).listen(+port, host, () => { if (mode === 'server') console.log('ready'); });
} else {
  const want = sha(body);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const fail = (why) => { console.log(why); process.exit(1); };
  let got = 0;
  const post = () => {
    const req = http.request({ host, port, method: 'POST', agent }, (res) => {
      let answer = '';
      res.on('data', (c) => { answer += c; });
      res.on('end', () => {
        if (answer !== `${body.length} ${want}`) fail(`post answered ${answer}`);
        console.log('post ok');
        agent.destroy();
      });
    });
    req.on('error', (e) => fail(`post: ${e.message}`));
    req.end(body);
  };
  for (let i = 0; i < +n; i++) {
    http.get({ host, port, agent }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => {
        if (sha(Buffer.concat(parts)) !== want) fail(`get ${i}: body differs`);
        if (++got === +n) { console.log(`gets ${got} ok`); post(); }
      });
    }).on('error', (e) => fail(`get ${i}: ${e.message}`));
  }
}
