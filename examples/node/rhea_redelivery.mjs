// rhea quick start: a redelivery limit with an error queue.
//
// examples/config/quickstart.toml gives queue quickstart.retry the policy
// redelivery_limit = 2, error_destination = "/queue/quickstart.retry.DLQ".
// The consumer fails every delivery (outcome modified, delivery-failed); after
// the third one the broker moves the message to the error queue, where a
// second consumer finds it. Port: SLUICE_AMQP_PORT (default 5672).
import rhea from 'rhea';

const fail = why => { console.error(`FAIL: ${why}`); process.exit(1); };
setTimeout(() => fail('not done within 15 s'), 15000).unref();
const conn = rhea.connect({ host: '127.0.0.1', port: Number(process.env.SLUICE_AMQP_PORT || 5672), reconnect: false });
conn.on('disconnected', ctx => fail(`disconnected: ${ctx.error || ctx.connection.error?.description}`));
let attempts = 0;
conn.open_receiver({ source: 'quickstart.retry', autoaccept: false }).on('message', ctx => {
  if (++attempts > 3) fail('a 4th delivery: is the broker running with examples/config/quickstart.toml?');
  console.log(`delivery ${attempts} of "${ctx.message.body}" (delivery-count ${ctx.message.delivery_count ?? 0}): failed`);
  ctx.delivery.modified({ delivery_failed: true }); // a failed delivery: counted against the limit
});
conn.open_receiver('quickstart.retry.DLQ').on('message', ctx => {
  const p = ctx.message.application_properties || {};
  console.log(`on the error queue: "${ctx.message.body}", ${p.JMS_SluiceErrorReason}, from ${p.JMS_SluiceOriginalDestination}`);
  if (attempts !== 3) fail(`delivered ${attempts} times, want 3 (1 + redelivery_limit 2)`);
  console.log('PASS: delivered three times, then moved to the error queue');
  conn.close();
});
conn.on('connection_close', () => process.exit(0));
conn.open_sender('quickstart.retry').once('sendable', ctx => ctx.sender.send({ body: 'poison', durable: true }));
