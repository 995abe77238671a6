package io.kbroker.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnsupportedSaslMechanismException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * SecurityTest: the Java client's SASL (PLAIN, SCRAM-SHA-256/512,
 * OAUTHBEARER), TLS with and without a client certificate, SASL_SSL, the
 * failures it reports for bad logins, re-authentication (KIP-368), ACL
 * denial for each API family and the Admin ACL calls, against a kbroker
 * started with every security feature on ({@link SecureBroker}). kbroker
 * only: skipped against an external broker.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SecurityTest {
    private SecureBroker broker;

    @BeforeAll
    void start() throws Exception {
        assumeTrue(TestBroker.external() == null, "starts its own kbroker with security listeners");
        broker = SecureBroker.start();
    }

    @AfterAll
    void stop() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    private static Admin admin(Properties security) {
        Properties p = new Properties();
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        p.putAll(security);
        return Admin.create(p);
    }

    /** Producer is a String producer; idempotent false keeps InitProducerId (and its cluster check) out. */
    private static KafkaProducer<String, String> producer(Properties security, boolean idempotent) {
        Properties p = new Properties();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, String.valueOf(idempotent));
        if (!idempotent) {
            p.put(ProducerConfig.ACKS_CONFIG, "all");
        }
        p.putAll(security);
        return new KafkaProducer<>(p);
    }

    private static KafkaConsumer<String, String> consumer(Properties security, String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.putAll(security);
        return new KafkaConsumer<>(p);
    }

    private Properties admin() {
        return broker.sasl("SASL_PLAINTEXT", "SCRAM-SHA-512", "admin", "admin-secret");
    }

    private Properties bob() {
        return broker.sasl("SASL_PLAINTEXT", "SCRAM-SHA-256", "bob", "bob-secret");
    }

    /** CreateTopic creates topic as the admin user. */
    private void createTopic(String topic) throws Exception {
        try (Admin a = admin(admin())) {
            Clients.get(a.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
        }
    }

    /** Cause unwraps an ExecutionException thrown by the call. */
    private static Throwable cause(Clients.Check call) {
        Exception e = assertThrows(Exception.class, call::holds);
        return e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    }

    /**
     * Each mechanism on each SASL listener logs in as admin (a super user):
     * creating a topic proves the principal, since nobody else may.
     */
    @ParameterizedTest
    @CsvSource({
        "SASL_PLAINTEXT, PLAIN", "SASL_PLAINTEXT, SCRAM-SHA-256", "SASL_PLAINTEXT, SCRAM-SHA-512",
        "SASL_SSL, PLAIN", "SASL_SSL, SCRAM-SHA-256", "SASL_SSL, SCRAM-SHA-512",
    })
    void saslLogins(String listener, String mechanism) throws Exception {
        String topic = TestBroker.topic("sasl-" + mechanism.toLowerCase());
        try (Admin a = admin(broker.sasl(listener, mechanism, "admin", "admin-secret"))) {
            Clients.get(a.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
            assertTrue(Clients.get(a.listTopics().names()).contains(topic));
        }
    }

    /** Produce and consume over SASL_SSL, the setting applications run with. */
    @Test
    void produceAndConsumeOverSaslSsl() throws Exception {
        Properties sec = broker.sasl("SASL_SSL", "SCRAM-SHA-512", "admin", "admin-secret");
        String topic = TestBroker.topic("sasl-ssl");
        createTopic(topic);
        try (KafkaProducer<String, String> p = producer(sec, true)) {
            Clients.produce(p, topic, 0, Clients.values("v", 3));
        }
        try (KafkaConsumer<String, String> c = consumer(sec, null)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            assertEquals(Clients.values("v", 3), Clients.poll(c, 3).stream().map(r -> r.value()).toList());
        }
    }

    /**
     * OAUTHBEARER with Kafka's default client callback handler: an unsecured
     * token whose sub is the principal; an expired token is refused.
     */
    @Test
    void oauthBearer() throws Exception {
        try (Admin a = admin(broker.oauth("SASL_PLAINTEXT", "admin", 3600))) {
            Clients.get(a.createTopics(List.of(new NewTopic(TestBroker.topic("oauth"), 1, (short) 1))).all());
        }
        try (Admin a = admin(broker.oauth("SASL_PLAINTEXT", "bob", 3600))) {
            assertInstanceOf(TopicAuthorizationException.class,
                cause(() -> Clients.get(a.createTopics(List.of(new NewTopic(TestBroker.topic("oauth-bob"), 1, (short) 1))).all()) != null),
                "bob's token makes bob the principal");
        }
        try (Admin a = admin(broker.oauth("SASL_PLAINTEXT", "admin", -60))) {
            assertInstanceOf(SaslAuthenticationException.class, cause(() -> Clients.get(a.describeCluster().clusterId()) != null),
                "a token that expired a minute ago");
        }
    }

    /** A wrong password and an unknown user both fail the login, PLAIN and SCRAM alike. */
    @ParameterizedTest
    @CsvSource({"PLAIN, alice, wrong", "PLAIN, mallory, x", "SCRAM-SHA-256, alice, wrong", "SCRAM-SHA-512, mallory, x"})
    void badLogins(String mechanism, String user, String password) throws Exception {
        try (Admin a = admin(broker.sasl("SASL_PLAINTEXT", mechanism, user, password))) {
            Throwable t = cause(() -> Clients.get(a.describeCluster().clusterId()) != null);
            assertInstanceOf(SaslAuthenticationException.class, t);
        }
    }

    /** LIMITED enables SCRAM-SHA-512 only (listener.name.limited.sasl.enabled.mechanisms). */
    @Test
    void mechanismTheListenerDoesNotEnable() throws Exception {
        try (Admin a = admin(broker.sasl("LIMITED", "PLAIN", "admin", "admin-secret"))) {
            assertInstanceOf(UnsupportedSaslMechanismException.class, cause(() -> Clients.get(a.describeCluster().clusterId()) != null));
        }
    }

    /**
     * LIMITED's sessions last SecureBroker.REAUTH_MS: a producer that keeps
     * sending re-authenticates on its connection (KIP-368) rather than
     * being cut off, which the broker's re-authentication counter shows.
     */
    @Test
    void reauthentication() throws Exception {
        String topic = TestBroker.topic("reauth");
        createTopic(topic);
        String counter = "kafka_server_socket_server_metrics_successful_reauthentication_total";
        double before = broker.metric(counter);
        try (KafkaProducer<String, String> p = producer(broker.sasl("LIMITED", "SCRAM-SHA-512", "admin", "admin-secret"), true)) {
            int[] sent = {0};
            Clients.eventually("a re-authentication on LIMITED", () -> {
                p.send(new ProducerRecord<>(topic, "r" + sent[0]++)).get(10, TimeUnit.SECONDS);
                return broker.metric(counter) > before;
            });
            // The connection stays usable after it.
            p.send(new ProducerRecord<>(topic, "after")).get(10, TimeUnit.SECONDS);
        }
    }

    /**
     * ssl.client.auth=requested: with the client certificate the principal is
     * User:app (a super user, by ssl.principal.mapping.rules); without one it
     * is User:ANONYMOUS, which may do nothing.
     */
    @Test
    void sslWithAndWithoutClientCertificate() throws Exception {
        try (Admin a = admin(broker.ssl(true))) {
            Clients.get(a.createTopics(List.of(new NewTopic(TestBroker.topic("ssl-cert"), 1, (short) 1))).all());
        }
        try (Admin a = admin(broker.ssl(false))) {
            assertFalse(Clients.get(a.describeCluster().clusterId()).isEmpty(), "TLS works without a certificate");
            assertInstanceOf(TopicAuthorizationException.class,
                cause(() -> Clients.get(a.createTopics(List.of(new NewTopic(TestBroker.topic("ssl-anon"), 1, (short) 1))).all()) != null));
        }
    }

    /** Bob, with no ACLs, is denied in every API family with the family's exception. */
    @Test
    void aclDenialPerFamily() throws Exception {
        String topic = TestBroker.topic("acl-deny");
        createTopic(topic);
        TopicPartition tp = new TopicPartition(topic, 0);
        // Produce.
        try (KafkaProducer<String, String> p = producer(bob(), false)) {
            assertInstanceOf(TopicAuthorizationException.class,
                cause(() -> p.send(new ProducerRecord<>(topic, "x")).get(15, TimeUnit.SECONDS) != null));
        }
        // Idempotent produce: InitProducerId needs IDEMPOTENT_WRITE (or WRITE on some topic).
        try (KafkaProducer<String, String> p = producer(bob(), true)) {
            Throwable t = cause(() -> p.send(new ProducerRecord<>(topic, "x")).get(15, TimeUnit.SECONDS) != null);
            assertTrue(t instanceof ClusterAuthorizationException || t instanceof TopicAuthorizationException, t.toString());
        }
        // Fetch.
        try (KafkaConsumer<String, String> c = consumer(bob(), null)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            assertThrows(TopicAuthorizationException.class, () -> {
                for (long end = System.nanoTime() + Clients.WAIT.toNanos(); System.nanoTime() < end; ) {
                    c.poll(Duration.ofMillis(200));
                }
            });
        }
        // Groups: with READ on the topic, the group still needs its own ACL.
        try (Admin a = admin(admin())) {
            Clients.get(a.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                new AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW)))).all());
        }
        try (KafkaConsumer<String, String> c = consumer(bob(), "bobs-group")) {
            assertThrows(GroupAuthorizationException.class, () -> c.commitSync(Map.of(tp, new OffsetAndMetadata(0))));
        }
        // Transactions.
        Properties tx = bob();
        tx.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "bobs-tx");
        try (KafkaProducer<String, String> p = producer(tx, true)) {
            assertThrows(TransactionalIdAuthorizationException.class, p::initTransactions);
        }
        // Admin: the ACL APIs need the cluster.
        try (Admin a = admin(bob())) {
            assertInstanceOf(ClusterAuthorizationException.class, cause(() -> Clients.get(a.describeAcls(AclBindingFilter.ANY).values()) != null));
            assertInstanceOf(ClusterAuthorizationException.class, cause(() -> {
                Clients.get(a.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TOPIC, "*", PatternType.LITERAL),
                    new AccessControlEntry("User:bob", "*", AclOperation.ALL, AclPermissionType.ALLOW)))).all());
                return true;
            }));
        }
    }

    /** createAcls, describeAcls and deleteAcls, and their effect on the next request. */
    @Test
    void adminAclCalls() throws Exception {
        String topic = TestBroker.topic("acl-admin");
        createTopic(topic);
        AclBinding write = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
            new AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW));
        AclBinding prefixed = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "alice-", PatternType.PREFIXED),
            new AccessControlEntry("User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW));
        AclBindingFilter alices = new AclBindingFilter(ResourcePatternFilter.ANY,
            new AccessControlEntryFilter("User:alice", null, AclOperation.ANY, AclPermissionType.ANY));
        Properties alice = broker.sasl("SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", "alice-secret");
        try (Admin a = admin(admin())) {
            Clients.get(a.createAcls(List.of(write, prefixed)).all());
            Collection<AclBinding> got = Clients.get(a.describeAcls(alices).values());
            assertEquals(2, got.size(), got.toString());
            assertTrue(got.contains(write) && got.contains(prefixed), got.toString());

            try (KafkaProducer<String, String> p = producer(alice, false)) {
                p.send(new ProducerRecord<>(topic, "allowed")).get(15, TimeUnit.SECONDS);
            }

            AclBindingFilter writeOnly = new AclBindingFilter(write.pattern().toFilter(), write.entry().toFilter());
            Collection<AclBinding> deleted = Clients.get(a.deleteAcls(List.of(writeOnly)).all());
            assertEquals(List.of(write), List.copyOf(deleted));
            assertEquals(List.of(prefixed), List.copyOf(Clients.get(a.describeAcls(alices).values())));
        }
        try (KafkaProducer<String, String> p = producer(alice, false)) {
            assertInstanceOf(TopicAuthorizationException.class,
                cause(() -> p.send(new ProducerRecord<>(topic, "denied")).get(15, TimeUnit.SECONDS) != null));
        }
    }
}
