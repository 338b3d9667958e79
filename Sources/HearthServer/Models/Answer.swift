import Hearth

/// A whole generated answer (the SDK's `Response`, named apart from an HTTP response).
typealias Answer = Response
