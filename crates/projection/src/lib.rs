//! Clipping, row normalisation, DP marginal std over DCA and threshold search for robust private regression
