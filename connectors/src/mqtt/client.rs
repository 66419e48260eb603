//! One face over rumqttc's MQTT 3.1.1 and MQTT 5 clients: building them from the settings,
//! polling events, acknowledging, subscribing.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5;
use rumqttc::v5::mqttbytes::v5 as p5;
use rumqttc::{Outgoing, TlsConfiguration, Transport};

use super::config::{BrokerAddress, MqttProtocol, Qos};

use super::config::MqttSourceConfig;

/// A received PUBLISH, protocol-independent.
#[derive(Debug, Clone)]
pub(crate) struct Incoming {
    /// The topic; `Err` with the raw bytes when it is not UTF-8 (MQTT 5 only).
    pub topic: Result<String, Bytes>,
    pub payload: Bytes,
    pub qos: u8,
    pub pkid: u16,
}

/// What a poll produced, reduced to what the source needs.
#[derive(Debug)]
pub(crate) enum Event {
    ConnAck {
        session_present: bool,
    },
    Publish(Incoming),
    /// A SUBACK with this many refused filters.
    SubAck {
        refused: usize,
    },
    /// An UNSUBACK.
    UnsubAck,
    /// A PUBACK or PUBREC we requested went out.
    AckSent,
    /// We sent DISCONNECT.
    DisconnectSent,
    Other,
}

pub(crate) enum Conn {
    V3(Box<rumqttc::EventLoop>),
    V5(Box<v5::EventLoop>),
}

#[derive(Clone)]
pub(crate) enum Client {
    V3(rumqttc::AsyncClient),
    V5(v5::AsyncClient),
}

fn qos3(q: Qos) -> rumqttc::QoS {
    match q {
        Qos::AtMostOnce => rumqttc::QoS::AtMostOnce,
        Qos::AtLeastOnce => rumqttc::QoS::AtLeastOnce,
        Qos::ExactlyOnce => rumqttc::QoS::ExactlyOnce,
    }
}

fn qos5(q: Qos) -> v5::mqttbytes::QoS {
    match q {
        Qos::AtMostOnce => v5::mqttbytes::QoS::AtMostOnce,
        Qos::AtLeastOnce => v5::mqttbytes::QoS::AtLeastOnce,
        Qos::ExactlyOnce => v5::mqttbytes::QoS::ExactlyOnce,
    }
}

fn level3(q: rumqttc::QoS) -> u8 {
    q as u8
}

fn level5(q: v5::mqttbytes::QoS) -> u8 {
    q as u8
}

/// Builds client and event loop. `cap` is the request-channel capacity (acks, subscribes).
pub(crate) fn build(
    opts: &MqttSourceConfig,
    ep: &BrokerAddress,
    client_id: &str,
    password: Option<String>,
    tls: Option<Arc<rustls::ClientConfig>>,
    cap: usize,
) -> (Client, Conn) {
    let transport = match tls {
        Some(cfg) => Transport::Tls(TlsConfiguration::Rustls(cfg)),
        None => Transport::Tcp,
    };
    let limit = opts.packet_limit();
    let timeout = opts.runtime.connect_timeout.as_secs().max(1);
    let username = opts.login.username.clone();
    match opts.protocol {
        MqttProtocol::V311 => {
            let mut o = rumqttc::MqttOptions::new(client_id, ep.host.clone(), ep.port);
            o.set_transport(transport);
            o.set_keep_alive(opts.keep_alive);
            // Validation guarantees a non-empty id when the session is persistent.
            o.set_clean_session(opts.clean_session || client_id.is_empty());
            o.set_max_packet_size(limit, limit);
            o.set_manual_acks(true);
            if let Some(u) = username {
                o.set_credentials(u, password.unwrap_or_default());
            }
            let (client, mut el) = rumqttc::AsyncClient::new(o, cap);
            el.set_network_options(network_options(timeout));
            (Client::V3(client), Conn::V3(Box::new(el)))
        }
        MqttProtocol::V5 => {
            let mut o = v5::MqttOptions::new(client_id, ep.host.clone(), ep.port);
            o.set_transport(transport);
            // rumqttc's MQTT 5 client cannot switch keep-alive off: "off" becomes the maximum.
            o.set_keep_alive(if opts.keep_alive.is_zero() {
                Duration::from_secs(65535)
            } else {
                opts.keep_alive
            });
            o.set_clean_start(opts.clean_session);
            let expiry = u32::try_from(opts.session_expiry.as_secs()).unwrap_or(u32::MAX);
            o.set_session_expiry_interval((expiry > 0).then_some(expiry));
            o.set_max_packet_size(Some(u32::try_from(limit).unwrap_or(u32::MAX)));
            o.set_receive_maximum(Some(opts.max_inflight.max(1)));
            o.set_manual_acks(true);
            o.set_connection_timeout(timeout);
            o.set_network_options(network_options(timeout));
            if let Some(u) = username {
                o.set_credentials(u, password.unwrap_or_default());
            }
            let (client, el) = v5::AsyncClient::new(o, cap);
            (Client::V5(client), Conn::V5(Box::new(el)))
        }
    }
}

/// TCP settings: no Nagle delay (acks are small writes that must leave at once).
fn network_options(timeout_secs: u64) -> rumqttc::NetworkOptions {
    let mut net = rumqttc::NetworkOptions::new();
    net.set_connection_timeout(timeout_secs);
    net.set_tcp_nodelay(true);
    net
}

fn outgoing(o: Outgoing) -> Event {
    match o {
        Outgoing::PubAck(_) | Outgoing::PubRec(_) => Event::AckSent,
        Outgoing::Disconnect => Event::DisconnectSent,
        _ => Event::Other,
    }
}

impl Conn {
    /// Polls the event loop once. `Err` means the connection is gone (rumqttc reconnects on
    /// the next poll).
    pub async fn poll(&mut self) -> Result<Event, String> {
        match self {
            Conn::V3(el) => match el.poll().await {
                Ok(rumqttc::Event::Incoming(p)) => Ok(match p {
                    rumqttc::Packet::ConnAck(c) => Event::ConnAck {
                        session_present: c.session_present,
                    },
                    rumqttc::Packet::Publish(p) => Event::Publish(Incoming {
                        topic: Ok(p.topic),
                        payload: p.payload,
                        qos: level3(p.qos),
                        pkid: p.pkid,
                    }),
                    rumqttc::Packet::SubAck(s) => Event::SubAck {
                        refused: s
                            .return_codes
                            .iter()
                            .filter(|c| matches!(c, rumqttc::SubscribeReasonCode::Failure))
                            .count(),
                    },
                    rumqttc::Packet::UnsubAck(_) => Event::UnsubAck,
                    _ => Event::Other,
                }),
                Ok(rumqttc::Event::Outgoing(o)) => Ok(outgoing(o)),
                Err(e) => Err(e.to_string()),
            },
            Conn::V5(el) => match el.poll().await {
                Ok(v5::Event::Incoming(p)) => Ok(match p {
                    p5::Packet::ConnAck(c) => Event::ConnAck {
                        session_present: c.session_present,
                    },
                    p5::Packet::Publish(p) => Event::Publish(Incoming {
                        topic: String::from_utf8(p.topic.to_vec()).map_err(|_| p.topic.clone()),
                        payload: p.payload,
                        qos: level5(p.qos),
                        pkid: p.pkid,
                    }),
                    p5::Packet::SubAck(s) => Event::SubAck {
                        refused: s
                            .return_codes
                            .iter()
                            .filter(|c| !matches!(c, p5::SubscribeReasonCode::Success(_)))
                            .count(),
                    },
                    p5::Packet::UnsubAck(_) => Event::UnsubAck,
                    _ => Event::Other,
                }),
                Ok(v5::Event::Outgoing(o)) => Ok(outgoing(o)),
                Err(e) => Err(e.to_string()),
            },
        }
    }

    /// Whether [`Conn::write_acks`] works on this client: MQTT 3.1.1 (rumqttc keeps an MQTT 5
    /// connection private; its acks go through the request channel, one per poll).
    pub fn direct_acks(&self) -> bool {
        matches!(self, Conn::V3(_))
    }

    /// Whether [`Conn::write_acks`] can write now: [`Conn::direct_acks`] and connected.
    pub fn writes_acks(&self) -> bool {
        match self {
            Conn::V3(el) => el.network.is_some(),
            Conn::V5(_) => false,
        }
    }

    /// Writes the acknowledgements of `acks` ((qos, pkid) in order: PUBACK for QoS 1, PUBREC
    /// for QoS 2, nothing for QoS 0) straight into the connection's write buffer and flushes
    /// them with one write (one per 8 KiB: the codec flushes a fuller buffer), instead of one
    /// request, one poll and one write per ack. rumqttc keeps no state for an outgoing PUBACK
    /// or PUBREC of a manually acknowledged message (its own `ack` only queues the packet), so
    /// this sends what `try_ack` would. Only between polls (`&mut self`), and only where
    /// [`Conn::writes_acks`]. `Err`: the connection failed; [`Conn::clean`] must follow.
    pub async fn write_acks(
        &mut self,
        acks: &[(u8, u16)],
        flush_timeout: Duration,
    ) -> Result<(), String> {
        let Conn::V3(el) = self else {
            return Err("acknowledgements go through the request channel on MQTT 5".into());
        };
        let Some(net) = el.network.as_mut() else {
            return Err("not connected".into());
        };
        for &(qos, pkid) in acks {
            let packet = match qos {
                1 => rumqttc::Packet::PubAck(rumqttc::PubAck::new(pkid)),
                2 => rumqttc::Packet::PubRec(rumqttc::PubRec::new(pkid)),
                _ => continue,
            };
            net.write(packet).await.map_err(|e| e.to_string())?;
        }
        match tokio::time::timeout(flush_timeout, net.flush()).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err("flush timeout".into()),
        }
    }

    /// Drops the connection state and every PUBACK still queued in the request channel (they
    /// belong to a connection that is gone; the broker redelivers those messages).
    /// Also drops rumqttc's reports of acks it sent on that connection and not yet returned
    /// by a poll, so that the source's count of sent acks starts again at zero with the
    /// next connection.
    pub fn clean(&mut self) {
        match self {
            Conn::V3(el) => {
                el.clean();
                el.state.events.retain(|e| {
                    !matches!(
                        e,
                        rumqttc::Event::Outgoing(Outgoing::PubAck(_) | Outgoing::PubRec(_))
                    )
                });
            }
            Conn::V5(el) => el.clean(),
        }
    }
}

impl Client {
    /// Queues the acknowledgement of (`qos`, `pkid`) without waiting; `false` when the request
    /// channel is full (or the event loop is gone).
    pub fn try_ack(&self, qos: u8, pkid: u16) -> bool {
        match self {
            Client::V3(c) => {
                let qos = match qos {
                    1 => rumqttc::QoS::AtLeastOnce,
                    2 => rumqttc::QoS::ExactlyOnce,
                    _ => return true,
                };
                let mut p = rumqttc::Publish::new("", qos, Vec::new());
                p.pkid = pkid;
                c.try_ack(&p).is_ok()
            }
            Client::V5(c) => {
                let qos = match qos {
                    1 => v5::mqttbytes::QoS::AtLeastOnce,
                    2 => v5::mqttbytes::QoS::ExactlyOnce,
                    _ => return true,
                };
                let mut p = p5::Publish::new("", qos, Vec::new(), None);
                p.pkid = pkid;
                c.try_ack(&p).is_ok()
            }
        }
    }

    /// Queues one SUBSCRIBE for every filter.
    pub fn try_subscribe(&self, subs: &[(String, Qos)]) -> Result<(), String> {
        match self {
            Client::V3(c) => c
                .try_subscribe_many(
                    subs.iter()
                        .map(|(f, q)| rumqttc::SubscribeFilter::new(f.clone(), qos3(*q))),
                )
                .map_err(|e| e.to_string()),
            Client::V5(c) => c
                .try_subscribe_many(
                    subs.iter()
                        .map(|(f, q)| p5::Filter::new(f.clone(), qos5(*q))),
                )
                .map_err(|e| e.to_string()),
        }
    }

    /// Queues one UNSUBSCRIBE per filter.
    pub fn try_unsubscribe(&self, filters: &[String]) -> Result<(), String> {
        for f in filters {
            let r = match self {
                Client::V3(c) => c.try_unsubscribe(f.clone()).map_err(|e| e.to_string()),
                Client::V5(c) => c.try_unsubscribe(f.clone()).map_err(|e| e.to_string()),
            };
            r?;
        }
        Ok(())
    }

    /// Queues a DISCONNECT.
    pub fn try_disconnect(&self) -> bool {
        match self {
            Client::V3(c) => c.try_disconnect().is_ok(),
            Client::V5(c) => c.try_disconnect().is_ok(),
        }
    }
}
