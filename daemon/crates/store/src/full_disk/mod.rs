//! A full disk, and healing from it without a restart: the space checks
//! and the store's state (`health`), the writes kept in memory until there
//! is room (`deferred`), the thread that heals (`healer`), the room the
//! store keeps to open at all (`reserve`), and the writes sled applied but
//! could not make durable, which no client may see (`unconfirmed`).

mod deferred;
mod healer;
pub(super) mod health;
pub(super) mod reserve;
pub(super) mod unconfirmed;
