package io.kbroker.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.math.BigInteger;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * SecureBroker is a second kbroker, started for the security tests: SASL,
 * TLS and ACLs on, with listeners of every kind.
 *
 * <ul>
 * <li>SASL_PLAINTEXT: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER
 * (Kafka's unsecured tokens);</li>
 * <li>LIMITED (SASL_PLAINTEXT): SCRAM-SHA-512 only, sessions of
 * {@link #REAUTH_MS} ms (listener.name.limited.* overrides), for a mechanism
 * the listener does not enable and for re-authentication;</li>
 * <li>SSL: client certificates requested, the principal taken from the
 * certificate's CN ({@code ssl.principal.mapping.rules});</li>
 * <li>SASL_SSL: SCRAM and PLAIN over TLS.</li>
 * </ul>
 *
 * <p>The authorizer is on, with {@code User:admin} and {@code User:app} (the
 * client certificate) super users; alice and bob have passwords and no
 * ACLs. The certificates are made here, at test time, with Bouncy Castle
 * and written as PEM (Kafka's KIP-651 form); nothing is committed.
 */
final class SecureBroker implements AutoCloseable {
    /** REAUTH_MS is the session lifetime on the LIMITED listener. */
    static final long REAUTH_MS = 1500;

    /** USERS are the SASL users, NAME:PASSWORD. */
    static final String USERS = "admin:admin-secret,alice:alice-secret,bob:bob-secret";

    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private final Process process;
    private final Path dir;
    private final Map<String, String> listeners;
    private final String adminAddr;
    final Path caFile;
    final String clientChain;
    final String clientKey;

    private SecureBroker(Process process, Path dir, Map<String, String> listeners, String adminAddr,
        Path caFile, String clientChain, String clientKey) {
        this.process = process;
        this.dir = dir;
        this.listeners = listeners;
        this.adminAddr = adminAddr;
        this.caFile = caFile;
        this.clientChain = clientChain;
        this.clientKey = clientKey;
    }

    /** Start makes the PKI and starts the broker binary named by -Dkbroker.binary. */
    static SecureBroker start() throws Exception {
        String binary = System.getProperty("kbroker.binary", "");
        if (binary.isBlank()) {
            throw new IllegalStateException("set -Dkbroker.binary=<path of kbroker> (test.sh does)");
        }
        Path dir = Files.createTempDirectory("kbroker-java-sec-");
        Pki pki = Pki.write(dir);
        Path config = dir.resolve("server.properties");
        List<String> lines = new ArrayList<>(List.of(TestBroker.BROKER_SETTINGS));
        lines.addAll(List.of(
            "listeners=SASL_PLAINTEXT://127.0.0.1:0,LIMITED://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,LIMITED:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
            "listener.name.limited.sasl.enabled.mechanisms=SCRAM-SHA-512",
            "listener.name.limited.connections.max.reauth.ms=" + REAUTH_MS,
            "kbroker.sasl.users=" + USERS,
            "connection.failed.authentication.delay.ms=10",
            "ssl.keystore.type=PEM",
            "ssl.keystore.location=" + pki.serverKeystore,
            "ssl.truststore.type=PEM",
            "ssl.truststore.location=" + pki.caFile,
            "ssl.client.auth=requested",
            "ssl.principal.mapping.rules=RULE:^(?:.*,)?CN=([^,]+)(?:,.*)?$/$1/,DEFAULT",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:admin;User:app",
            "allow.everyone.if.no.acl.found=false"));
        Files.write(config, lines, StandardCharsets.UTF_8);
        Path log = Path.of("target", "kbroker-security.log").toAbsolutePath();
        Files.createDirectories(log.getParent());
        ProcessBuilder pb = new ProcessBuilder(binary, "--data-dir", dir.resolve("data").toString(),
            "--segment-bytes", "4194304", "--config", config.toString(),
            "--admin-listen", "127.0.0.1:0", "--log-format", "json");
        Process p = pb.start();
        // stderr is the log: copied to the log file, and read for the
        // admin listener's address.
        CompletableFuture<String> admin = new CompletableFuture<>();
        Thread logger = new Thread(() -> copyLog(p, log, admin), "kbroker-sec-log");
        logger.setDaemon(true);
        logger.start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<Map<String, String>> ready = CompletableFuture.supplyAsync(() -> readListeners(out));
        Map<String, String> ls;
        String adminAddr;
        try {
            ls = ready.get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            adminAddr = admin.get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            p.destroyForcibly();
            throw new IllegalStateException("the secure kbroker did not start; log in " + log, e);
        }
        Thread drain = new Thread(() -> {
            try {
                while (out.readLine() != null) {
                    // discard
                }
            } catch (IOException ignored) {
                // the process is gone
            }
        }, "kbroker-sec-stdout");
        drain.setDaemon(true);
        drain.start();
        return new SecureBroker(p, dir, ls, adminAddr, pki.caFile, pki.clientChain, pki.clientKey);
    }

    /** ReadListeners reads the "kbroker listener NAME (PROTOCOL) on ADDR" lines until all four came. */
    private static Map<String, String> readListeners(BufferedReader out) {
        Pattern line = Pattern.compile("^kbroker listener (\\S+) \\(\\S+\\) on (\\S+)$");
        Map<String, String> ls = new HashMap<>();
        try {
            String s;
            while (ls.size() < 4 && (s = out.readLine()) != null) {
                Matcher m = line.matcher(s);
                if (m.matches()) {
                    ls.put(m.group(1), m.group(2));
                }
            }
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
        if (ls.size() < 4) {
            throw new IllegalStateException("kbroker named " + ls + ", want four listeners");
        }
        return ls;
    }

    private static void copyLog(Process p, Path log, CompletableFuture<String> admin) {
        Pattern addr = Pattern.compile("\"addr\":\"([^\"]+)\"");
        try (BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
             PrintWriter w = new PrintWriter(Files.newBufferedWriter(log, StandardCharsets.UTF_8), true)) {
            String s;
            while ((s = err.readLine()) != null) {
                w.println(s);
                if (!admin.isDone() && s.contains("admin listening on")) {
                    Matcher m = addr.matcher(s);
                    if (m.find()) {
                        admin.complete(m.group(1));
                    }
                }
            }
        } catch (IOException ignored) {
            // the process is gone
        }
        admin.completeExceptionally(new IllegalStateException("no \"admin listening on\" line in the log"));
    }

    /** Addr is the address of the listener named name. */
    String addr(String name) {
        return listeners.get(name);
    }

    /**
     * Metric reads one counter of the broker's Prometheus /metrics (the
     * sum over its label sets), or 0 when absent.
     */
    double metric(String name) throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + adminAddr + "/metrics"))
            .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
        double sum = 0;
        for (String s : r.body().split("\n")) {
            if (s.startsWith(name + " ") || s.startsWith(name + "{")) {
                sum += Double.parseDouble(s.substring(s.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    /** Sasl are client settings for a PLAIN or SCRAM login on listener. */
    Properties sasl(String listener, String mechanism, String user, String password) {
        String module = mechanism.equals("PLAIN")
            ? "org.apache.kafka.common.security.plain.PlainLoginModule"
            : "org.apache.kafka.common.security.scram.ScramLoginModule";
        return saslWith(listener, mechanism, module + " required username=\"" + user + "\" password=\"" + password + "\";");
    }

    /**
     * OAuth are client settings for an OAUTHBEARER login with Kafka's
     * default (unsecured) client callback handler: a token with alg none
     * whose sub is user, expiring lifetimeSeconds from now.
     */
    Properties oauth(String listener, String user, long lifetimeSeconds) {
        return saslWith(listener, "OAUTHBEARER", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
            + " unsecuredLoginStringClaim_sub=\"" + user + "\" unsecuredLoginLifetimeSeconds=\"" + lifetimeSeconds + "\";");
    }

    private Properties saslWith(String listener, String mechanism, String jaas) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, addr(listener));
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, listener.equals("SASL_SSL") ? "SASL_SSL" : "SASL_PLAINTEXT");
        p.put(SaslConfigs.SASL_MECHANISM, mechanism);
        p.put(SaslConfigs.SASL_JAAS_CONFIG, jaas);
        if (listener.equals("SASL_SSL")) {
            p.putAll(trust());
        }
        return p;
    }

    /** Ssl are client settings for the SSL listener, with or without the client certificate. */
    Properties ssl(boolean withCert) {
        Properties p = trust();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, addr("SSL"));
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
        if (withCert) {
            // KIP-651 in-line PEM: a key file needs ssl.key.password, the
            // in-line key may be unencrypted.
            p.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM");
            p.put(SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG, clientChain);
            p.put(SslConfigs.SSL_KEYSTORE_KEY_CONFIG, clientKey);
        }
        return p;
    }

    private Properties trust() {
        Properties p = new Properties();
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, caFile.toString());
        return p;
    }

    @Override
    public void close() throws Exception {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }

    /** Pki is a test CA with a server certificate for 127.0.0.1/localhost and a client certificate (CN=app). */
    private record Pki(Path caFile, Path serverKeystore, String clientChain, String clientKey) {
        static Pki write(Path dir) throws Exception {
            KeyPairGenerator kpg = KeyPairGenerator.getInstance("EC");
            kpg.initialize(256);
            long now = System.currentTimeMillis();
            Date from = new Date(now - 3_600_000L), to = new Date(now + 86_400_000L);
            KeyPair caKeys = kpg.generateKeyPair();
            X500Name caName = new X500Name("CN=kbroker java test CA");
            X509v3CertificateBuilder cab = new JcaX509v3CertificateBuilder(caName, BigInteger.ONE, from, to, caName, caKeys.getPublic());
            cab.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
            cab.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
            ContentSigner signer = new JcaContentSignerBuilder("SHA256withECDSA").build(caKeys.getPrivate());
            X509Certificate ca = new JcaX509CertificateConverter().getCertificate(cab.build(signer));

            KeyPair serverKeys = kpg.generateKeyPair();
            X509v3CertificateBuilder sb = new JcaX509v3CertificateBuilder(caName, BigInteger.TWO, from, to,
                new X500Name("CN=localhost"), serverKeys.getPublic());
            sb.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
                new GeneralName(GeneralName.dNSName, "localhost"), new GeneralName(GeneralName.iPAddress, "127.0.0.1")}));
            sb.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
            X509Certificate server = new JcaX509CertificateConverter().getCertificate(sb.build(signer));

            KeyPair clientKeys = kpg.generateKeyPair();
            X509v3CertificateBuilder clb = new JcaX509v3CertificateBuilder(caName, BigInteger.valueOf(3), from, to,
                new X500Name("CN=app,OU=eng,O=kbroker"), clientKeys.getPublic());
            clb.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_clientAuth));
            X509Certificate client = new JcaX509CertificateConverter().getCertificate(clb.build(signer));

            Path caFile = dir.resolve("ca.pem");
            Files.writeString(caFile, pem("CERTIFICATE", ca.getEncoded()));
            Path serverKeystore = dir.resolve("server-keystore.pem");
            Files.writeString(serverKeystore, key(serverKeys.getPrivate()) + pem("CERTIFICATE", server.getEncoded()));
            return new Pki(caFile, serverKeystore, pem("CERTIFICATE", client.getEncoded()), key(clientKeys.getPrivate()));
        }

        /** Key is a private key as unencrypted PKCS#8 PEM, the form Kafka's PEM keystores read. */
        private static String key(PrivateKey k) {
            return pem("PRIVATE KEY", k.getEncoded()); // Java encodes private keys as PKCS#8
        }

        private static String pem(String type, byte[] der) {
            return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END " + type + "-----\n";
        }
    }
}
