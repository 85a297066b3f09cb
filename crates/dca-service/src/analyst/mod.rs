//! The analyst: runs the learners over the network with the nodes and the aggregator as the
//! DCA transport; it takes no data of the participants.

pub mod fit;
pub mod train;
