use fixedpoint_shares::ClientId;

/// What went wrong in a verified round.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The round itself (configuration, codec, client input) refused.
    #[error(transparent)]
    Round(#[from] fixedpoint_shares::Error),
    /// A parameter of the verified mode is out of its range.
    #[error("{name} = {value} is invalid: must be {requirement}")]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A client's data are longer (L2) than the round's bound: it refuses to take part.
    #[error("client {client}: its data's L2 norm {norm} exceeds the round's bound {bound}")]
    DataPastBound {
        /// The client.
        client: ClientId,
        /// ‖x‖₂ on the grid, value units.
        norm: f64,
        /// The bound, value units.
        bound: f64,
    },
    /// libprio refused an operation that honest parties never make fail.
    #[error("proof system: {0}")]
    Proof(String),
    /// More clients are missing (dropped or invalid) than the round tolerates: nothing released.
    #[error(
        "{dropped} clients dropped and {invalid} sent invalid contributions ({invalid_clients:?}): more than T = {max_dropped} missing, nothing released"
    )]
    TooManyMissing {
        /// Clients that sent nothing.
        dropped: usize,
        /// Clients whose proofs failed.
        invalid: usize,
        /// Their ids.
        invalid_clients: Vec<ClientId>,
        /// T.
        max_dropped: usize,
    },
    /// The released sum does not fit the round's grid (cannot happen with valid contributions and
    /// a round config that holds the sum).
    #[error("coordinate {coordinate} of the verified sum does not fit 64 bits")]
    SumOverflow {
        /// The coordinate.
        coordinate: usize,
    },
}

impl From<prio::vdaf::VdafError> for Error {
    fn from(e: prio::vdaf::VdafError) -> Self {
        Error::Proof(e.to_string())
    }
}
