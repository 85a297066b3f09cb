//! What every party agrees on: the round spec, the messages the parties exchange, the codecs,
//! the jobs and their kinds, and the upload of sealed shares to the nodes.

pub mod job;
pub mod messages;
pub mod spec;
pub mod sum_codec;
pub mod upload;
pub mod validity;
pub mod verified_close;
