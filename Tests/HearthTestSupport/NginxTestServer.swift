import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// nginx in front of `hearth serve` replicas, as docs/REPLICAS.md configures it: round robin
/// over the upstreams, streamed answers passed on as they come, and a request that cannot reach
/// a replica (or that a draining replica turns away with 503) sent to the next one. It runs in
/// the foreground on a free loopback port with its configuration, logs and temporary files in a
/// temporary directory, and is stopped by `stop()`, at the test process's exit, or by a
/// watchdog should the process die first.
public final class NginxTestServer: @unchecked Sendable {
    /// The port on 127.0.0.1 it listens on.
    public let port: Int
    /// Its directory: nginx.conf, error.log, access.log, temporary files.
    public let directory: URL
    private let child: Child
    private let scratch: TemporaryDirectory

    /// Why nginx tests cannot run here, or nil when they can.
    public static let unavailableReason: String? = executable == nil
        ? "nginx is not installed (no nginx in /usr/sbin or PATH): apt-get install nginx to run the replica tests." : nil

    public static var isInstalled: Bool { unavailableReason == nil }

    static let executable: String? = (["/usr/sbin/nginx"] + (ProcessInfo.processInfo.environment["PATH"] ?? "")
        .split(separator: ":").map { "\($0)/nginx" }).first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The base URL clients use.
    public var base: String { "http://127.0.0.1:\(port)" }

    /// The `http` block's settings for replicas at `upstreams` ("127.0.0.1:PORT"), listening on
    /// `listen`: what docs/REPLICAS.md shows.
    public static func configuration(upstreams: [String], listen: String) -> String {
        """
        upstream hearth {
        \(upstreams.map { "    server \($0) max_fails=1 fail_timeout=10s;" }.joined(separator: "\n"))
            keepalive 32;
        }
        server {
            listen \(listen);
            client_max_body_size 64m;
            location / {
                proxy_pass http://hearth;
                proxy_http_version 1.1;
                proxy_set_header Connection "";
                proxy_set_header Host $host;
                proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                proxy_buffering off;
                proxy_read_timeout 600s;
                proxy_next_upstream error http_502 http_503 non_idempotent;
                proxy_next_upstream_tries 3;
            }
        }
        """
    }

    /// Starts nginx in front of `upstreams`; returns once it answers on its port.
    public init(upstreams: [String]) async throws {
        guard let executable = Self.executable else { throw TestFiles.Missing(description: Self.unavailableReason ?? "nginx is missing") }
        scratch = try TemporaryDirectory()
        directory = scratch.url
        var lastError = ""
        for _ in 0..<5 {
            let port = try freeLoopbackPort()
            let dir = directory.path
            let conf = """
                daemon off;
                master_process on;
                worker_processes 1;
                \(geteuid() == 0 ? "user root;" : "")
                pid \(dir)/nginx.pid;
                error_log \(dir)/error.log warn;
                events { worker_connections 1024; }
                http {
                    access_log \(dir)/access.log;
                    client_body_temp_path \(dir)/body;
                    proxy_temp_path \(dir)/proxy;
                    fastcgi_temp_path \(dir)/fastcgi;
                    uwsgi_temp_path \(dir)/uwsgi;
                    scgi_temp_path \(dir)/scgi;
                \(Self.configuration(upstreams: upstreams, listen: "127.0.0.1:\(port)"))
                }
                """
            let file = directory.appendingPathComponent("nginx.conf")
            try Data(conf.utf8).write(to: file)
            let child = try Child(URL(fileURLWithPath: executable), ["-p", dir, "-c", file.path, "-e", "\(dir)/error.log"],
                                  environment: ProcessInfo.processInfo.environment, directory: scratch)
            if try await Self.answers(port: port, child: child) {
                self.port = port
                self.child = child
                child.killWhenTestsEnd()
                return
            }
            child.signal(SIGKILL)
            _ = try? await child.wait()
            lastError = child.errorText + ((try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? "")
        }
        throw TestFiles.Missing(description: "nginx did not start: \(lastError.suffix(2000))")
    }

    /// Whether nginx came to listen on `port` (false when it exited first, as when the port was
    /// taken), within two minutes (on a busy machine it may be slow to start).
    private static func answers(port: Int, child: Child) async throws -> Bool {
        for _ in 0..<4800 {
            guard child.isRunning else { return false }
            if canConnect(port: port) { return true }
            try await Task.sleep(for: .milliseconds(25))
        }
        return false
    }

    /// Lines of the access log so far.
    public var accessLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
    }

    /// Stops nginx (SIGTERM: at once) and waits for it.
    public func stop() async {
        child.signal(SIGTERM)
        _ = try? await child.wait()
    }

}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
public func canConnect(port: Int) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
public func freeLoopbackPort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw TestFiles.Missing(description: "socket() failed: \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
        }
    }
    guard bound else { throw TestFiles.Missing(description: "No free port on 127.0.0.1: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}
