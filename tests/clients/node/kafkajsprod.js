// kafkajsprod: KafkaJS producer speaking the tests/clients protocol.
// Options: idempotent=0|1 request_timeout_ms retries.
'use strict';
const readline = require('readline');
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, ...rest] = process.argv.slice(2);
const opts = Object.fromEntries(rest.map((kv) => kv.split('=')));
const int = (k, d) => (k in opts ? parseInt(opts[k], 10) : d);
const idempotent = int('idempotent', 1) === 1;
const rt = int('request_timeout_ms', 3000);

const kafka = new Kafka({
  clientId: 'kafkajs',
  brokers: [bootstrap],
  requestTimeout: rt,
  retry: { retries: int('retries', 5), initialRetryTime: 100, maxRetryTime: 2000 },
  logLevel: logLevel.WARN,
});
const producer = kafka.producer({ idempotent, maxInFlightRequests: idempotent ? 1 : 5 });
let pending = [];

function send(partition, value) {
  const p = producer
    .send({ topic, acks: -1, timeout: rt, messages: [{ partition, value }] })
    .then((res) => {
      const r = res.find((x) => x.partition === partition) || res[0];
      process.stdout.write(`ACK ${partition} ${r.baseOffset} ${value}\n`);
    })
    .catch((e) => {
      const code = e.type ? ` type=${e.type}` : '';
      const retr = ` retriable=${e.retriable}`;
      process.stdout.write(`ERR ${partition} ${value} ${e.name}${code}${retr} ${String(e.message).replace(/\n/g, ' ')}\n`);
    });
  pending.push(p);
}

async function flush() {
  const ps = pending;
  pending = [];
  await Promise.all(ps);
}

(async () => {
  await producer.connect();
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const f = line.trim().split(/\s+/);
    if (f.length === 3 && f[0] === 'send') send(parseInt(f[1], 10), f[2]);
    else if (f[0] === 'flush') { await flush(); process.stdout.write('FLUSHED\n'); }
    else if (f[0] !== '') { process.stderr.write(`bad line ${line}\n`); process.exit(2); }
  }
  await flush();
  await producer.disconnect();
  process.stdout.write('DONE\n');
})().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
