import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The web UI: its page at / and its files under /ui/.
struct WebController: Sendable {
    /// The folder of the web UI's files: the package resources beside the executable (or the
    /// test runner), nil when they are missing.
    static let webDirectory: URL? = {
        let bundleName = "Hearth_HearthServer.resources"
        var candidates = [Bundle.main.bundleURL.appendingPathComponent(bundleName)]
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.deletingLastPathComponent().appendingPathComponent(bundleName))
        }
        for candidate in candidates {
            let web = candidate.appendingPathComponent("Web")
            if FileManager.default.fileExists(atPath: web.appendingPathComponent("index.html").path) { return web }
        }
        return nil
    }()

    static let webTypes = ["html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
                           "css": "text/css; charset=utf-8", "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon"]

    func addRoutes(to router: some RouterMethods<BasicRequestContext>) {
        router.get("/") { _, _ in try Self.webFile("index.html") }
        router.get("ui/{file}") { _, context in try Self.webFile(try context.parameters.require("file")) }
    }

    static func webFile(_ name: String) throws -> Response {
        guard let directory = webDirectory else {
            throw ServerError.notFound("The web UI's files (Hearth_HearthServer.resources) are not next to the hearth executable; keep them together when copying it.")
        }
        // Only plain names from the folder: never a path out of it.
        guard !name.contains("/"), !name.hasPrefix("."), let type = webTypes[(name as NSString).pathExtension],
              let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) else {
            throw ServerError.notFound("There is no file \(name) in the web UI.")
        }
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(data: data)))
    }
}
