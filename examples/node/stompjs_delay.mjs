// @stomp/stompjs quick start (Node, over TCP): time-to-deliver.
//
// A message sent with the header AMQ_SCHEDULED_DELAY: 2000 (ActiveMQ's name;
// sluice-time-to-deliver is Sluice's) is held for 2 seconds: the message sent
// after it, without a delay, arrives first. Port: SLUICE_STOMP_PORT (61613).
import { Client } from '@stomp/stompjs';
import { TCPWrapper } from '@stomp/tcp-wrapper';

const fail = why => { console.error(`FAIL: ${why}`); process.exit(1); };
setTimeout(() => fail('not done within 15 s'), 15000).unref();
const port = Number(process.env.SLUICE_STOMP_PORT || 61613);
const client = new Client({
  webSocketFactory: () => new TCPWrapper('127.0.0.1', port),
  reconnectDelay: 0, // fail instead of reconnecting
  onStompError: frame => fail(`ERROR ${frame.headers.message}`),
  onWebSocketClose: () => fail('connection closed'),
});
client.onConnect = () => {
  const sent = Date.now(), got = [];
  client.subscribe('/queue/quickstart.later', m => {
    const after = Date.now() - sent;
    got.push(m.body);
    console.log(`"${m.body}" after ${after} ms (sluice-delivery-time ${m.headers['sluice-delivery-time'] ?? '-'})`);
    if (m.body === 'held 2 s' && after < 2000) fail('delivered before its time');
    if (got.length < 2) return;
    if (got.join() !== 'right away,held 2 s') fail(`order ${got}`);
    console.log('PASS: the delayed message was held until its time');
    client.onWebSocketClose = () => process.exit(0);
    client.deactivate(); // DISCONNECT, then the socket closes
  });
  client.publish({ destination: '/queue/quickstart.later', body: 'held 2 s', headers: { AMQ_SCHEDULED_DELAY: '2000' } });
  client.publish({ destination: '/queue/quickstart.later', body: 'right away' });
};
client.activate();
