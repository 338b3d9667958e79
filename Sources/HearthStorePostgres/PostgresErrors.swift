import Foundation
import HearthCore
import HearthStore
import NIOCore
import NIOPosix
import PostgresNIO
import _ConnectionPoolModule

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `HearthError` for an error from postgres-nio, its pool or the network, saying what to do.
/// None of them shows the password: errors name the database by `PostgresURL.description`.
enum PostgresErrors {
    static func translate(_ error: any Error, url: PostgresURL) -> any Error {
        let location = url.description
        func unreachable(_ reason: String) -> HearthError { .chatDatabaseUnreachable(location: location, reason: reason) }
        func failed(_ reason: String) -> HearthError { .chatStoreFailed(path: location, reason: reason) }

        switch error {
        case is HearthError, is CancellationError:
            return error
        case let error as PostgresTransactionError:
            // What went wrong first: BEGIN, the work inside, or COMMIT.
            guard let cause = error.beginError ?? error.closureError ?? error.commitError ?? error.rollbackError else {
                return failed("a transaction failed")
            }
            return translate(cause, url: url)
        case let error as ConnectionPoolError:
            switch error {
            case .requestCancelled: return CancellationError()
            case .poolShutdown: return failed("the store has been closed")
            case .connectionCreationCircuitBreakerTripped:
                return unreachable("no connection to \(url.server) could be made for a minute")
            default: return failed("the connection pool failed (\(error))")
            }
        case let error as PSQLError:
            return translate(error, url: url, unreachable: unreachable, failed: failed)
        case is PostgresDecodingError:
            return HearthError.chatStoreDamaged(path: location, reason: "a stored value is not of the type Hearth wrote (\(error))")
        default:
            if let reason = connectionProblem(error, url: url) { return unreachable(reason) }
            return failed(String(describing: error))
        }
    }

    private static func translate(_ error: PSQLError, url: PostgresURL, unreachable: (String) -> HearthError,
                                  failed: (String) -> HearthError) -> any Error {
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            let message = error.serverInfo?[.message] ?? "an error"
            switch state {
            case "28P01":
                return unreachable("the server refused the password of the user \(url.user) (put the right one in the URL, or in PGPASSWORD)")
            case "28000":
                return unreachable("the server does not let \(url.user) log in to the database \(url.database): \(message)")
            case "3D000":
                return unreachable("the server at \(url.server) has no database \(url.database) (create it: createdb -h \(url.host) -p \(url.port) -U \(url.user) \(url.database))")
            case "57P01", "57P02", "57P03":
                return unreachable("the server at \(url.server) is shutting down or starting up (\(message))")
            case "53300":
                return unreachable("the server at \(url.server) has no connection left to give (\(message); raise its max_connections)")
            case "57014":
                // Only a cancelled task makes the server cancel a statement.
                return Task.isCancelled ? CancellationError() : failed("the server cancelled a statement (\(message))")
            case "42501":
                return failed("the user \(url.user) may not do this: \(message) (grant it the rights on the database, or use its owner)")
            default:
                return failed("\(message) (SQLSTATE \(state))")
            }
        case .sslUnsupported:
            return unreachable("the server at \(url.server) does not offer TLS, which sslmode=\(url.tls.rawValue) asks for (turn ssl on in the server, or use sslmode=disable)")
        case .failedToAddSSLHandler:
            return unreachable("the TLS connection to \(url.server) could not be set up (check sslmode and sslrootcert)")
        case .authMechanismRequiresPassword:
            return unreachable("the server asks for the password of \(url.user), and none was given (put it in the URL, postgres://\(url.user):PASSWORD@…, or in PGPASSWORD)")
        case .unsupportedAuthMechanism:
            return unreachable("the server asks for a way of logging in that Hearth does not speak (use scram-sha-256, md5, password or trust in pg_hba.conf)")
        case .saslError:
            return unreachable("logging in as \(url.user) failed part way (SCRAM)")
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            if let underlying = error.underlying, let reason = connectionProblem(underlying, url: url) { return unreachable(reason) }
            return unreachable("the connection to \(url.server) was closed")
        case .poolClosed:
            return failed("the store has been closed")
        case .queryCancelled:
            return Task.isCancelled ? CancellationError() : failed("a statement was cancelled")
        case .connectionError:
            if let underlying = error.underlying, let reason = connectionProblem(underlying, url: url) { return unreachable(reason) }
            return unreachable("cannot connect to \(url.server)")
        default:
            if let underlying = error.underlying, let reason = connectionProblem(underlying, url: url) { return unreachable(reason) }
            return failed("postgres-nio reports \(error.code)")
        }
    }

    /// What went wrong in reaching the server, or nil if `error` is not about that.
    private static func connectionProblem(_ error: any Error, url: PostgresURL) -> String? {
        switch error {
        case let error as NIOConnectionError:
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                return "the host name \(url.host) does not resolve to an address"
            }
            if let first = error.connectionErrors.first { return connectionProblem(first.error, url: url) }
            return "cannot connect to \(url.server)"
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED:
                return "nothing accepts connections at \(url.server) (connection refused)"
            case ETIMEDOUT, EHOSTUNREACH, ENETUNREACH:
                return "\(url.server) cannot be reached (\(String(cString: strerror(error.errnoCode))))"
            case ECONNRESET, EPIPE:
                return "the connection to \(url.server) was cut (\(String(cString: strerror(error.errnoCode))))"
            default:
                return "cannot connect to \(url.server) (\(String(cString: strerror(error.errnoCode))))"
            }
        case let error as ChannelError:
            if case .connectTimeout(let timeout) = error {
                return "\(url.server) did not answer within \(timeout.nanoseconds / 1_000_000_000) seconds"
            }
            return nil
        case let error as NIOSSLError:
            return "the TLS handshake with \(url.server) failed (\(error); check sslmode and sslrootcert)"
        case let error as BoringSSLError:
            return "the TLS handshake with \(url.server) failed (\(error); check sslmode and sslrootcert)"
        default:
            return nil
        }
    }
}
