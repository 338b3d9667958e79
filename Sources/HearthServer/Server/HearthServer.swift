import Dispatch
import Foundation
import Hearth
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// The server: `start()` binds and serves in the background, `wait()` returns when it stops.
public final class HearthServer: Sendable {
    /// Hearth's version, as /api/version and the traces' service.version give it.
    public static let version = HearthService.version
    let service: HearthService
    private let state = Mutex<(port: Int, task: Task<Void, any Error>?, group: ServiceGroup?)>((0, nil, nil))
    private let signalSources = Mutex<SignalSources?>(nil)
    private let signalsReceived = Atomic<Int>(0)

    /// A server with `configuration`, loading models through `hearth`. Opens (or creates) the
    /// chat threads database, connecting to it when it is PostgreSQL; throws when it cannot.
    /// `logger` gets the database's messages about lost connections (none by default).
    public init(configuration: ServerConfiguration, hearth: Hearth = Hearth(), logger: Logger? = nil) async throws {
        var log = logger ?? Logger(label: "hearth.server")
        if logger == nil { log.logLevel = .warning }
        service = try await HearthService(configuration: configuration, hearth: hearth, logger: log)
    }

    /// The port it listens on, once started.
    public var port: Int { state.withLock { $0.port } }

    /// Binds and starts serving; returns once the port is open. Throws when the address cannot
    /// be bound. With `handleSignals`, SIGINT and SIGTERM drain the server (see `drain()`) and a
    /// second one stops it at once; SIGQUIT stops it without waiting. `services` run beside the
    /// server and stop after it (a trace exporter, which then sends what it still holds).
    public func start(logger: Logger? = nil, handleSignals: Bool = false, services: [any Service] = []) async throws {
        let configuration = service.configuration
        var log = logger ?? Logger(label: "hearth.server")
        if logger == nil { log.logLevel = .warning }
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = Application(router: service.router(),
                              configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "hearth"),
                              onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) },
                              logger: log)
        let service = self.service
        // Services stop in the reverse of this order: the server first, then the others, which
        // so see its last requests.
        var groupConfiguration = ServiceGroupConfiguration(services: services + [app], logger: log)
        if handleSignals { groupConfiguration.cancellationSignals = [.sigquit] }
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(5)
        let group = ServiceGroup(configuration: groupConfiguration)
        let task = Task {
            let sweeper = Task { await service.sweepIdleModels() }
            defer { sweeper.cancel() }
            do {
                try await group.run()
            } catch {
                portContinuation.finish()
                await service.store.close()
                throw error
            }
            // The requests have finished (or were given up on): the store's connections can go.
            await service.store.close()
        }
        var bound: Int?
        for await value in ports {
            bound = value
            break
        }
        guard let bound else {
            let result = await task.result
            if case .failure(let error) = result { throw error }
            throw HearthError.resourceUnavailable("The server stopped before it was listening.")
        }
        state.withLock { $0 = (bound, task, group) }
        if handleSignals { handleTerminationSignals() }
    }

    /// SIGTERM or SIGINT: a drain; another one: a stop without waiting for answers.
    private func handleTerminationSignals() {
        let sources = [SIGTERM, SIGINT].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [self] in
                if signalsReceived.add(1, ordering: .relaxed).newValue == 1 {
                    self.service.drain.draining.store(true, ordering: .relaxed)
                    Task {
                        let running = self.service.drain.requestsInProgress.load(ordering: .relaxed)
                        if running > 0 {
                            let seconds = Int(self.service.configuration.drainSeconds.rounded())
                            FileHandle.standardError.write(Data("Draining: \(running) request\(running == 1 ? "" : "s") still running (at most \(seconds) s); new ones get 503. Press Ctrl-C again to stop now.\n".utf8))
                        }
                        await self.drain()
                    }
                } else {
                    // At once: the run is cancelled, open streams with it.
                    state.withLock { $0.task }?.cancel()
                }
            }
            source.resume()
            return source
        }
        let kept = SignalSources(sources)
        signalSources.withLock { $0 = kept }
    }

    /// Drains and stops the server, as a replica leaving a load balancer: /health answers 503
    /// "draining" and new requests 503 at once, the requests in progress (streamed answers,
    /// transcriptions, a model loading for one) run to their end (for at most `drainSeconds`),
    /// then the server stops.
    public func drain() async {
        let service = self.service
        service.drain.draining.store(true, ordering: .relaxed)
        let deadline = ContinuousClock.now + .seconds(service.configuration.drainSeconds)
        while ContinuousClock.now < deadline, service.drain.requestsInProgress.load(ordering: .relaxed) > 0 {
            try? await Task.sleep(for: .milliseconds(100))
        }
        await stop()
    }

    /// Returns when the server stops: after `stop()`, or on SIGINT / SIGTERM.
    public func wait() async throws {
        let task = state.withLock { $0.task }
        try await task?.value
    }

    /// Stops serving, giving requests in progress a few seconds to finish.
    public func stop() async {
        let (task, group) = state.withLock { ($0.task, $0.group) }
        await group?.triggerGracefulShutdown()
        _ = await task?.result
    }
}

/// The signal handlers a server keeps for as long as it runs (they stop when released).
private final class SignalSources: @unchecked Sendable {
    let sources: [any DispatchSourceSignal]
    init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
}
