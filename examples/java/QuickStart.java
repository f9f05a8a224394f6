// Qpid JMS quick start: a JMS 2.0 durable subscription with a selector, over AMQP 1.0.
// NOT RUN IN CI: Maven Central, where Qpid JMS comes from, cannot be reached from the build machines.
// To run it, put org.apache.qpid:qpid-jms-client (a 1.x version, the javax.jms / JMS 2.0 line;
// 2.x is the same client for jakarta.jms) and its dependencies in lib/, start the broker, and
// run the source file (Java 11 or later):  java -cp 'lib/*' examples/java/QuickStart.java
import javax.jms.*;
import org.apache.qpid.jms.JmsConnectionFactory;

public class QuickStart {
    public static void main(String[] args) throws JMSException {
        ConnectionFactory factory = new JmsConnectionFactory("amqp://localhost:5672");
        try (JMSContext context = factory.createContext()) {
            context.setClientID("quickstart-java"); // a durable subscription belongs to a client ID
            Topic topic = context.createTopic("quickstart.alerts");
            String selector = "severity = 'high'";
            // Subscribe, then go away: the subscription keeps the messages it selects.
            context.createDurableConsumer(topic, "high-alerts", selector, false).close();
            JMSProducer producer = context.createProducer();
            producer.setProperty("severity", "low").send(topic, "disk 70% full");
            producer.setProperty("severity", "high").send(topic, "disk 99% full");
            // Back with the same client ID and subscription name.
            JMSConsumer consumer = context.createDurableConsumer(topic, "high-alerts", selector, false);
            Message first = consumer.receive(10_000), second = consumer.receive(1_000);
            consumer.close();
            context.unsubscribe("high-alerts"); // delete the durable subscription
            String body = first == null ? null : first.getBody(String.class);
            System.out.println("received while away: " + body + (second == null ? "" : ", and more"));
            if (!"disk 99% full".equals(body) || second != null) {
                System.out.println("FAIL: want only the high-severity alert");
                System.exit(1);
            }
            System.out.println("PASS: the durable subscription kept only the alert its selector took");
        }
    }
}
