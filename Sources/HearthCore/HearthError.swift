import Foundation

/// Every error Hearth throws. Each case says what went wrong and what to do about it.
public enum HearthError: Error, Sendable, Equatable {
    /// Which part of the system an error comes from.
    public enum Category: String, Sendable, Codable {
        case input, model, network, resource, generation
    }

    /// A file that was asked for does not exist or cannot be read.
    case fileNotFound(path: String)
    /// A model name that resolves to no file.
    case modelNotFound(name: String)
    /// Loading the model would need more memory than the machine (or the configured limit) has.
    case insufficientMemory(needed: Int, available: Int)
    /// A model file is damaged or is not in the format it claims to be.
    case invalidModelFile(path: String, reason: String)
    /// An audio file that cannot be decoded, or holds no audio.
    case invalidAudioFile(path: String, reason: String)
    /// A model file is well formed, but uses something Hearth does not implement.
    case unsupportedModel(reason: String)
    /// A value given by the caller is out of range or malformed.
    case invalidArgument(String)
    /// The prompt and generation do not fit in the model's context window.
    case contextOverflow(needed: Int, limit: Int)
    /// The operating system refused a resource (memory map, memory, threads).
    case resourceUnavailable(String)
    /// Generation failed part way.
    case generationFailed(String)
    /// A chat template is malformed, or refused to render (its own `raise_exception`, a value it
    /// cannot use, or a render that ran past its step, output or depth budget).
    case invalidTemplate(line: Int, column: Int, reason: String)
    /// The Hub wants a token for this repository: it is private or gated, or the token sent is
    /// not valid.
    case hubAuthenticationRequired(repo: String)
    /// The token is valid but may not read this repository: a gated model whose license has not
    /// been accepted, or a private repository of someone else.
    case hubAccessDenied(repo: String, gated: Bool)
    /// The repository, revision or file does not exist on the Hub (or is private and no token
    /// was sent).
    case hubNotFound(repo: String, revision: String?, file: String?)
    /// The Hub asked to slow down (HTTP 429); `retryAfter` is its Retry-After in seconds.
    case hubRateLimited(retryAfter: Int?)
    /// The Hub (or the storage behind it) failed with a 5xx status.
    case hubServerError(status: Int)
    /// The Hub answered with something Hearth does not understand.
    case hubInvalidResponse(String)
    /// The connection failed, timed out or was cut.
    case networkFailure(String)
    /// Offline mode (`HF_HUB_OFFLINE`) is on and what was asked for is not in the cache.
    case offlineNotCached(name: String)
    /// A downloaded file's sha256 differs from the one the Hub lists for it.
    case checksumMismatch(file: String, expected: String, actual: String)
    /// Not enough free disk space for a download.
    case insufficientDiskSpace(needed: Int, available: Int, path: String)
    /// The model cache cannot be written by this process (a cache shared read-only, say).
    case cacheNotWritable(path: String, reason: String)
    /// A file name from a server that would land outside the cache (`..`, an absolute path).
    case unsafeRemotePath(String)
    /// A model server (an OpenAI-compatible endpoint) refused or failed a request.
    case remoteRejected(endpoint: String, status: Int, message: String, retryAfter: Int?)
    /// No chat thread has this id (it never existed, or it was deleted).
    case threadNotFound(id: String)
    /// The thread has no message with this id (it never had, or the message was deleted).
    case messageNotFound(threadID: String, id: Int64)
    /// The chat database cannot be used: the file is not a SQLite database or is damaged, or the
    /// file or PostgreSQL database belongs to another application.
    case chatStoreDamaged(path: String, reason: String)
    /// The chat database was written by a newer Hearth: it has schema migrations this build does
    /// not know, so reading or writing it could lose data.
    case chatStoreTooNew(path: String, unknownMigrations: [String])
    /// Reading or writing the chat database failed (permissions, a full disk, a lock held too long).
    case chatStoreFailed(path: String, reason: String)
    /// The chat database's server (PostgreSQL) cannot be reached or refuses the login; `location`
    /// is its URL without the password, `reason` what went wrong.
    case chatDatabaseUnreachable(location: String, reason: String)

    /// What went wrong, and what to do.
    public var message: String {
        switch self {
        case .fileNotFound(let path):
            return "No file at \(path). Check the path, or run scripts/fetch-models to get the test models."
        case .modelNotFound(let name):
            return "No model called \"\(name)\". Give the path of a .gguf file, or a model in the cache (see `hearth ls`)."
        case .insufficientMemory(let needed, let available):
            return "The model needs about \(HumanReadable.bytes(needed)) of memory (weights and KV cache) but only \(HumanReadable.bytes(available)) is available. Use a smaller quantization or model, or a shorter context."
        case .invalidModelFile(let path, let reason):
            return "\(path) is not a valid model file: \(reason). Download it again; if it still fails, the file is not a GGUF/safetensors model Hearth can read."
        case .invalidAudioFile(let path, let reason):
            return "Cannot read the audio in \(path): \(reason)."
        case .unsupportedModel(let reason):
            return "Unsupported model: \(reason). Use a model with a supported architecture and quantization (see `hearth inspect`)."
        case .invalidArgument(let text):
            return text
        case .contextOverflow(let needed, let limit):
            return "The prompt and requested tokens need \(needed) positions but the context holds \(limit). Shorten the prompt, ask for fewer tokens, or raise the context size."
        case .resourceUnavailable(let text):
            return "\(text). Free some memory or use a smaller model."
        case .generationFailed(let text):
            return "Generation failed: \(text)."
        case .invalidTemplate(let line, let column, let reason):
            return "chat template line \(line), column \(column): \(reason)"
        case .hubAuthenticationRequired(let repo):
            return "\(repo) needs a Hugging Face token: it is private or gated, or the token is not valid. Create a read token at https://huggingface.co/settings/tokens and set HF_TOKEN (or run `hf auth login`)."
        case .hubAccessDenied(let repo, let gated):
            if gated {
                return "\(repo) is gated: accept its license at https://huggingface.co/\(repo) with the account whose token is in HF_TOKEN, then try again."
            }
            return "Your token may not read \(repo). Use a token of an account with access to it (HF_TOKEN)."
        case .hubNotFound(let repo, let revision, let file):
            if let file {
                return "\(repo) has no file \(file)\(revision.map { " at revision \($0)" } ?? ""). Check the name with `hearth show \(repo)`."
            }
            if let revision {
                return "\(repo) has no revision \(revision). Use a branch, tag or commit that exists (default: main)."
            }
            return "No model \(repo) on the Hub. Check the spelling (`hearth search`); if it is private, set HF_TOKEN."
        case .hubRateLimited(let retryAfter):
            if let retryAfter {
                return "The Hub is rate-limiting requests: retry after \(retryAfter) s. Logging in (HF_TOKEN) raises the limit."
            }
            return "The Hub is rate-limiting requests: wait a minute and retry. Logging in (HF_TOKEN) raises the limit."
        case .hubServerError(let status):
            return "The Hub failed with HTTP \(status). It is usually temporary: retry in a minute."
        case .hubInvalidResponse(let text):
            return "Unexpected answer from the Hub: \(text). Check HF_ENDPOINT, or retry later."
        case .networkFailure(let text):
            return "Network error: \(text). Check the connection (and HF_ENDPOINT), then retry; a pull resumes where it stopped."
        case .offlineNotCached(let name):
            return "\(name) is not in the cache and offline mode is on (HF_HUB_OFFLINE). Unset HF_HUB_OFFLINE and pull it, or use a cached model (`hearth ls`)."
        case .checksumMismatch(let file, let expected, let actual):
            return "\(file) arrived corrupted (sha256 \(actual), expected \(expected)); it was discarded. Pull again."
        case .insufficientDiskSpace(let needed, let available, let path):
            return "The download needs \(HumanReadable.bytes(needed)) but only \(HumanReadable.bytes(available)) is free at \(path). Free some space (`hearth prune`) or set HF_HUB_CACHE to a larger disk."
        case .cacheNotWritable(let path, let reason):
            return "The Hugging Face cache at \(path) cannot be written by this process (\(reason)). Models already in it load as they are; pull new ones where the cache may be written, or set HF_HUB_CACHE to a writable folder."
        case .unsafeRemotePath(let path):
            return "Refused the file name \"\(path)\" from the server: it would land outside the cache. Check HF_ENDPOINT points at a trustworthy hub."
        case .remoteRejected(let endpoint, let status, let message, let retryAfter):
            let said = message.isEmpty ? "" : ": \(message)"
            switch status {
            case 401, 403: return "\(endpoint) refused the request (HTTP \(status))\(said). Check the API key."
            case 404: return "\(endpoint) answered HTTP 404\(said). Check the model name and the base URL (it usually ends in /v1)."
            case 429: return "\(endpoint) is rate-limiting requests (HTTP 429)\(said). Retry \(retryAfter.map { "after \($0) s" } ?? "in a minute")."
            case 500...: return "\(endpoint) failed with HTTP \(status)\(said). It is usually temporary: retry later."
            default: return "\(endpoint) rejected the request (HTTP \(status))\(said)."
            }
        case .threadNotFound(let id):
            return "No chat thread with id \(id). It may have been deleted; list the threads to get a current id."
        case .messageNotFound(let threadID, let id):
            return "Chat thread \(threadID) has no message with id \(id). It may have been deleted; list the thread's messages to get current ids."
        case .chatStoreDamaged(let path, let reason):
            if Self.isDatabaseURL(path) {
                return "\(path) cannot be used as Hearth's chat database: \(reason). Give Hearth a database of its own (createdb hearth) with --database or HEARTH_DATABASE_URL."
            }
            return "\(path) cannot be used as Hearth's chat database: \(reason). Move it aside (for example `mv \(path) \(path).bak`) and Hearth starts a new one, or set HEARTH_DATA_DIR to another directory."
        case .chatStoreTooNew(let path, let unknownMigrations):
            let elsewhere = Self.isDatabaseURL(path)
                ? "point --database or HEARTH_DATABASE_URL at another database" : "set HEARTH_DATA_DIR to another directory"
            return "\(path) was written by a newer version of Hearth (schema changes this version does not know: \(unknownMigrations.joined(separator: ", "))). Upgrade Hearth, or \(elsewhere) to keep a separate database."
        case .chatStoreFailed(let path, let reason):
            if Self.isDatabaseURL(path) {
                return "The chat database \(path) failed: \(reason). Check the PostgreSQL server (its log says more), then try again."
            }
            return "The chat database \(path) failed: \(reason). Check that its directory is writable and the disk is not full, then try again."
        case .chatDatabaseUnreachable(let location, let reason):
            return "Cannot use the chat database \(location): \(reason). Check that PostgreSQL is running there and that --database or HEARTH_DATABASE_URL names the right host, port, user, password and database."
        }
    }

    /// The part of the system the error comes from.
    public var category: Category {
        switch self {
        case .fileNotFound, .modelNotFound, .invalidArgument, .invalidTemplate, .threadNotFound, .messageNotFound,
             .invalidAudioFile:
            return .input
        case .invalidModelFile, .unsupportedModel: return .model
        case .contextOverflow, .generationFailed: return .generation
        case .resourceUnavailable, .insufficientMemory, .insufficientDiskSpace, .cacheNotWritable,
             .chatStoreDamaged, .chatStoreTooNew, .chatStoreFailed:
            return .resource
        case .chatDatabaseUnreachable:
            return .network
        case .hubAuthenticationRequired, .hubAccessDenied, .hubNotFound, .hubRateLimited, .hubServerError,
             .hubInvalidResponse, .networkFailure, .offlineNotCached, .checksumMismatch, .unsafeRemotePath, .remoteRejected:
            return .network
        }
    }

    /// Whether the same request might succeed if tried again unchanged.
    public var isRetryable: Bool {
        switch self {
        case .resourceUnavailable, .hubRateLimited, .hubServerError, .networkFailure, .checksumMismatch,
             .chatDatabaseUnreachable: return true
        case .remoteRejected(_, let status, _, _): return status == 408 || status == 429 || status >= 500
        default: return false
        }
    }
}

extension HearthError {
    /// Whether a chat store's location is a database server's URL rather than a file.
    private static func isDatabaseURL(_ location: String) -> Bool { location.contains("://") }
}

extension HearthError: LocalizedError, CustomStringConvertible {
    public var errorDescription: String? { message }
    public var description: String { message }
}
