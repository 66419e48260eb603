//! MQTT load generator: publishes deterministic IoTDB JSON batches (batch form, 1,000 points
//! per message by default) at a target rate with QoS 1, and reports the achieved rate.
//! With `--consume` it also runs the MQTT source in the same process into an in-memory
//! counting sink and reports what the connector made "durable" and acknowledged.
//!
//! ```text
//! cargo run --release -p tsfiled-connectors --example mqtt_loadgen -- \
//!     --broker mqtt://127.0.0.1:1883 --rate 500000 --duration 60 --consume
//! ```
//!
//! Options (defaults in brackets): `--broker URL` [mqtt://127.0.0.1:1883], `--topic PREFIX`
//! [bench], `--rate POINTS_PER_S` (0 = as fast as possible) [500000], `--duration S` [10],
//! `--points N` per message [1000], `--measurements M` per message [10], `--devices D` [10],
//! `--qos 0|1` [1], `--consume`, `--protocol 3|5` (connector) [5], `--window N` (connector
//! in-flight window) [1000], `--sink-delay-ms MS` (simulated durability latency) [0],
//! `--client-id ID` (connector) [tsfiled-loadgen-<pid>], `--drain POINTS`: publish nothing,
//! `--batch N` (messages per sink submission) [256], `--submits N` (concurrent submissions)
//! [2]; only run the connector until it has POINTS points (what the broker queued for the
//! session `--client-id` while it was away) and report its rate alone.
//!
//! Data: message `k` goes to `<prefix>/d<k % D>`, device `root.bench.d<k % D>`, timestamps
//! `k * T .. k * T + T - 1` (T = points / measurements), measurement `s<j>`, value
//! `((t * 7 + j * 13) % 10000) / 10` as a double: every run publishes the same bytes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, Event, MqttOptions, Outgoing, Packet, QoS};
use tokio_util::sync::CancellationToken;
use tsfiled_connectors::mqtt::{
    run, BrokerAddress, CountingMetrics, MqttPayload, MqttProtocol, MqttSourceConfig, Qos,
};
use tsfiled_connectors::sink::MemorySink;

struct Args {
    broker: String,
    topic: String,
    rate: u64,
    duration: u64,
    points: usize,
    measurements: usize,
    devices: u64,
    qos: QoS,
    consume: bool,
    protocol: MqttProtocol,
    window: usize,
    sink_delay: Duration,
    client_id: String,
    drain: u64,
    batch: usize,
    submits: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        broker: "mqtt://127.0.0.1:1883".into(),
        topic: "bench".into(),
        rate: 500_000,
        duration: 10,
        points: 1000,
        measurements: 10,
        devices: 10,
        qos: QoS::AtLeastOnce,
        consume: false,
        protocol: MqttProtocol::V5,
        window: 1000,
        sink_delay: Duration::ZERO,
        client_id: format!("tsfiled-loadgen-{}", std::process::id()),
        drain: 0,
        batch: 256,
        submits: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--consume" {
            a.consume = true;
            continue;
        }
        let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--broker" => a.broker = v,
            "--topic" => a.topic = v,
            "--rate" => a.rate = num(&v)?,
            "--duration" => a.duration = num(&v)?,
            "--points" => a.points = num(&v)? as usize,
            "--measurements" => a.measurements = num(&v)? as usize,
            "--devices" => a.devices = num(&v)?.max(1),
            "--qos" => {
                a.qos = match v.as_str() {
                    "0" => QoS::AtMostOnce,
                    "1" => QoS::AtLeastOnce,
                    _ => return Err("--qos is 0 or 1".into()),
                }
            }
            "--protocol" => {
                a.protocol = match v.as_str() {
                    "3" | "3.1.1" => MqttProtocol::V311,
                    "5" => MqttProtocol::V5,
                    _ => return Err("--protocol is 3 or 5".into()),
                }
            }
            "--window" => a.window = num(&v)? as usize,
            "--sink-delay-ms" => a.sink_delay = Duration::from_millis(num(&v)?),
            "--client-id" => a.client_id = v,
            "--drain" => a.drain = num(&v)?,
            "--batch" => a.batch = num(&v)?.max(1) as usize,
            "--submits" => a.submits = num(&v)?.max(1) as usize,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if a.measurements == 0 || a.points == 0 || !a.points.is_multiple_of(a.measurements) {
        return Err("--points must be a positive multiple of --measurements".into());
    }
    Ok(a)
}

/// Message `k` (see the module docs).
fn message(a: &Args, k: u64, out: &mut String) {
    use std::fmt::Write;
    let per = (a.points / a.measurements) as u64;
    let t0 = k * per;
    out.clear();
    let _ = write!(
        out,
        r#"{{"device":"root.bench.d{}","timestamps":["#,
        k % a.devices
    );
    for i in 0..per {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}", t0 + i);
    }
    out.push_str(r#"],"measurements":["#);
    for j in 0..a.measurements {
        if j > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"s{j}\"");
    }
    // IoTDB's batch form: one row per timestamp, one value per measurement.
    out.push_str(r#"],"values":["#);
    for i in 0..per {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        let t = t0 + i;
        for j in 0..a.measurements as u64 {
            if j > 0 {
                out.push(',');
            }
            let v = (t * 7 + j * 13) % 10_000;
            let _ = write!(out, "{}.{}", v / 10, v % 10);
        }
        out.push(']');
    }
    out.push_str("]}");
}

async fn publisher(a: Arc<Args>, stop_at: Instant) -> Result<(u64, Duration), String> {
    let ep = BrokerAddress::parse(&a.broker)?;
    let mut o = MqttOptions::new(
        format!("loadgen-pub-{}", std::process::id()),
        ep.host,
        ep.port,
    );
    o.set_max_packet_size(16 << 20, 16 << 20);
    o.set_inflight(1000);
    o.set_keep_alive(Duration::from_secs(30));
    let (client, mut el) = AsyncClient::new(o, 2000);
    let acked = Arc::new(AtomicU64::new(0));
    let ack2 = acked.clone();
    let qos = a.qos;
    let pump = tokio::spawn(async move {
        loop {
            match el.poll().await {
                Ok(Event::Incoming(Packet::PubAck(_))) => {
                    ack2.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Event::Outgoing(Outgoing::Publish(_))) if qos == QoS::AtMostOnce => {
                    ack2.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Event::Outgoing(Outgoing::Disconnect)) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(format!("publisher connection: {e}")),
            }
        }
    });
    let msgs_per_s = if a.rate == 0 {
        f64::INFINITY
    } else {
        a.rate as f64 / a.points as f64
    };
    let start = Instant::now();
    let mut sent = 0u64;
    let mut buf = String::new();
    while Instant::now() < stop_at {
        let due = if msgs_per_s.is_finite() {
            (start.elapsed().as_secs_f64() * msgs_per_s) as u64 + 1
        } else {
            sent + 64
        };
        while sent < due && Instant::now() < stop_at {
            message(&a, sent, &mut buf);
            let topic = format!("{}/d{}", a.topic, sent % a.devices);
            client
                .publish(topic, a.qos, false, buf.clone().into_bytes())
                .await
                .map_err(|e| e.to_string())?;
            sent += 1;
        }
        if msgs_per_s.is_finite() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
    // Wait for the broker's acknowledgements.
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.load(Ordering::Relaxed) < sent && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = start.elapsed();
    let _ = client.disconnect().await;
    if let Ok(Ok(Err(e))) = tokio::time::timeout(Duration::from_secs(5), pump).await {
        return Err(e);
    }
    let got = acked.load(Ordering::Relaxed);
    if got < sent {
        return Err(format!("only {got} of {sent} publishes were acknowledged"));
    }
    Ok((sent, elapsed))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a = match parse_args() {
        Ok(a) => Arc::new(a),
        Err(e) => {
            eprintln!("mqtt_loadgen: {e}");
            std::process::exit(2);
        }
    };
    let sink = Arc::new(MemorySink::counting());
    sink.set_delay(a.sink_delay);
    let metrics = Arc::new(CountingMetrics::default());
    let token = CancellationToken::new();
    let connector = if a.consume {
        let mut o = match MqttSourceConfig::new(&a.broker, &a.client_id) {
            Ok(o) => o.filter(
                &format!("{}/#", a.topic),
                Qos::AtLeastOnce,
                MqttPayload::IotdbJson,
            ),
            Err(e) => {
                eprintln!("mqtt_loadgen: {e}");
                std::process::exit(2);
            }
        };
        o.protocol = a.protocol;
        o.max_inflight = u16::try_from(a.window).unwrap_or(u16::MAX);
        o.session_expiry = Duration::from_secs(60);
        o.runtime.name = "loadgen".into();
        o.runtime.max_batch_messages = a.batch;
        o.runtime.max_concurrent_submits = a.submits;
        let h = tokio::spawn(run(o, sink.clone(), token.clone(), metrics.clone()));
        let deadline = Instant::now() + Duration::from_secs(10);
        while CountingMetrics::get(&metrics.subscribed) == 0 {
            if Instant::now() > deadline || h.is_finished() {
                eprintln!("mqtt_loadgen: the connector did not subscribe");
                std::process::exit(1);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Some(h)
    } else {
        None
    };

    if a.drain > 0 {
        let Some(h) = connector else {
            eprintln!("mqtt_loadgen: --drain needs --consume");
            std::process::exit(2);
        };
        let deadline = Instant::now() + Duration::from_secs(300);
        while sink.points() == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let t0 = Instant::now();
        let p0 = sink.points();
        let mut last = (Instant::now(), p0);
        while sink.points() < a.drain && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
            if last.0.elapsed() >= Duration::from_secs(1) {
                let (now, p) = (Instant::now(), sink.points());
                eprintln!(
                    "t={:>5.1}s durable+acked {p:>12} points ({:>10.0} points/s), in flight {}",
                    t0.elapsed().as_secs_f64(),
                    (p - last.1) as f64 / (now - last.0).as_secs_f64(),
                    CountingMetrics::get(&metrics.in_flight)
                );
                last = (now, p);
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        let got = sink.points() - p0;
        println!(
            "connector alone (draining a queued session): {got} points in {secs:.2} s: {:.0} points/s, {} sink submissions, max in flight {}",
            got as f64 / secs,
            sink.submits(),
            CountingMetrics::get(&metrics.in_flight_max),
        );
        token.cancel();
        let _ = h.await;
        return;
    }
    let start = Instant::now();
    let stop_at = start + Duration::from_secs(a.duration);
    let pub_task = tokio::spawn(publisher(a.clone(), stop_at));
    // Report every second.
    let mut last = (Instant::now(), 0u64);
    while !pub_task.is_finished() {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if a.consume {
            let p = sink.points();
            let now = Instant::now();
            let rate = (p - last.1) as f64 / (now - last.0).as_secs_f64();
            eprintln!(
                "t={:>3.0}s durable+acked {:>12} points ({:>10.0} points/s), in flight {}",
                start.elapsed().as_secs_f64(),
                p,
                rate,
                CountingMetrics::get(&metrics.in_flight)
            );
            last = (now, p);
        }
    }
    let (sent, elapsed) = match pub_task.await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            eprintln!("mqtt_loadgen: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("mqtt_loadgen: publisher panicked: {e}");
            std::process::exit(1);
        }
    };
    let secs = elapsed.as_secs_f64();
    let points = sent * a.points as u64;
    println!(
        "published {sent} messages ({points} points) in {secs:.2} s: {:.0} msgs/s, {:.0} points/s (QoS {})",
        sent as f64 / secs,
        points as f64 / secs,
        a.qos as u8
    );
    if let Some(h) = connector {
        let deadline = Instant::now() + Duration::from_secs(60);
        while sink.points() < points && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let total = start.elapsed().as_secs_f64();
        let got = sink.points();
        println!(
            "connector: {got} points durable and acknowledged in {total:.2} s: {:.0} points/s \
             ({} messages, {} sink submissions, max in flight {}, errors {})",
            got as f64 / total,
            CountingMetrics::get(&metrics.messages),
            sink.submits(),
            CountingMetrics::get(&metrics.in_flight_max),
            CountingMetrics::get(&metrics.errors),
        );
        token.cancel();
        let _ = h.await;
        if got < points {
            eprintln!("mqtt_loadgen: the connector received {got} of {points} points");
            std::process::exit(1);
        }
    }
}
