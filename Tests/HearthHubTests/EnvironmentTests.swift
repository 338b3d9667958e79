import Foundation
import Hearth
import HearthHub
import Testing

@Suite("Hub environment, read as huggingface_hub reads it")
struct EnvironmentTests {
    @Test func defaultsUnderTheHomeDirectory() {
        let environment = HubEnvironment(environment: ["HOME": "/home/u"])
        #expect(environment.endpoint.absoluteString == "https://huggingface.co")
        #expect(environment.home.path == "/home/u/.cache/huggingface")
        #expect(environment.cacheDirectory.path == "/home/u/.cache/huggingface/hub")
        #expect(environment.tokenPath.path == "/home/u/.cache/huggingface/token")
        #expect(environment.token == nil)
        #expect(!environment.offline)
    }

    @Test func cacheLocationPrecedence() {
        #expect(HubEnvironment(environment: ["HOME": "/u", "XDG_CACHE_HOME": "/x"]).cacheDirectory.path == "/x/huggingface/hub")
        #expect(HubEnvironment(environment: ["HOME": "/u", "HF_HOME": "/h"]).cacheDirectory.path == "/h/hub")
        #expect(HubEnvironment(environment: ["HOME": "/u", "HF_HOME": "/h", "HUGGINGFACE_HUB_CACHE": "/legacy"]).cacheDirectory.path == "/legacy")
        #expect(HubEnvironment(environment: ["HOME": "/u", "HUGGINGFACE_HUB_CACHE": "/legacy", "HF_HUB_CACHE": "/c"]).cacheDirectory.path == "/c")
        #expect(HubEnvironment(environment: ["HOME": "/u", "HF_HOME": "~/hf"]).cacheDirectory.path == "/u/hf/hub")
        #expect(HubEnvironment(environment: ["HOME": "/u", "D": "/data", "HF_HUB_CACHE": "$D/hub-${D}/$NOPE"]).cacheDirectory.path
            == "/data/hub-/data/$NOPE")
        #expect(HubEnvironment(environment: ["HOME": "/u", "HF_HOME": "/h", "HF_TOKEN_PATH": "/t/tok"]).tokenPath.path == "/t/tok")
    }

    @Test func theSDKDefaultIsTheHubCache() {
        for environment in [["HOME": "/u"], ["HF_HOME": "/h"], ["HF_HUB_CACHE": "/c", "HF_HOME": "/h"], ["XDG_CACHE_HOME": "/x"]] {
            #expect(Hearth.Configuration.defaultCacheDirectory(environment: environment) == HubEnvironment(environment: environment).cacheDirectory)
        }
    }

    @Test func endpointLosesTrailingSlashes() {
        #expect(HubEnvironment(environment: ["HF_ENDPOINT": "http://127.0.0.1:9/"]).endpoint.absoluteString == "http://127.0.0.1:9")
    }

    @Test(arguments: [("1", true), ("ON", true), ("yes", true), ("True", true), ("0", false), ("no", false), ("", false), ("false", false)])
    func offlineFlag(value: String, expected: Bool) {
        #expect(HubEnvironment(environment: ["HF_HUB_OFFLINE": value]).offline == expected)
        #expect(HubEnvironment(environment: ["TRANSFORMERS_OFFLINE": value]).offline == expected)
    }

    @Test func tokenPrecedence() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("  hf_file\r\n".utf8).write(to: directory.appendingPathComponent("token"))
        let home = ["HF_HOME": directory.path]
        #expect(HubEnvironment(environment: home).token == "hf_file")
        #expect(HubEnvironment(environment: home.merging(["HUGGING_FACE_HUB_TOKEN": "hf_old"]) { a, _ in a }).token == "hf_old")
        #expect(HubEnvironment(environment: home.merging(["HUGGING_FACE_HUB_TOKEN": "hf_old", "HF_TOKEN": " hf_new\n"]) { a, _ in a }).token == "hf_new")
        try Data("\n".utf8).write(to: directory.appendingPathComponent("token"))
        #expect(HubEnvironment(environment: home).token == nil)
    }
}

@Suite("Glob patterns match as fnmatch does")
struct GlobPatternTests {
    @Test(arguments: [
        ("*.gguf", "model.Q4_K_M.gguf", true), ("*.gguf", "sub/dir/model.gguf", true), ("*.gguf", "model.gguf.json", false),
        ("*Q4_K_M*", "a-Q4_K_M.gguf", true), ("model-?.bin", "model-1.bin", true), ("model-?.bin", "model-12.bin", false),
        ("[!a]x", "bx", true), ("[!a]x", "ax", false), ("[a-c]*", "beta", true), ("[a-c]*", "delta", false),
        ("onnx/", "onnx/model.onnx", true), ("onnx/", "model.onnx", false), ("[abc", "[abc", true), ("*", "", true),
        ("config.json", "config.json", true), ("*.json", "tokenizer.json", true), ("a*b*c", "axxbyyc", true), ("a*b*c", "axxbyy", false),
    ])
    func matches(pattern: String, name: String, expected: Bool) {
        #expect(GlobPattern(pattern).matches(name) == expected)
    }
}

@Suite("Network errors")
struct NetworkErrorTests {
    @Test func categoriesAndRetries() {
        let retryable: [HearthError] = [.hubRateLimited(retryAfter: 3), .hubServerError(status: 503), .networkFailure("reset"),
                                        .checksumMismatch(file: "f", expected: "a", actual: "b")]
        let final: [HearthError] = [.hubAuthenticationRequired(repo: "a/b"), .hubAccessDenied(repo: "a/b", gated: true),
                                    .hubNotFound(repo: "a/b", revision: nil, file: nil), .offlineNotCached(name: "a/b"),
                                    .unsafeRemotePath("../x")]
        for error in retryable + final { #expect(error.category == .network) }
        for error in retryable { #expect(error.isRetryable) }
        for error in final { #expect(!error.isRetryable) }
        #expect(HearthError.insufficientDiskSpace(needed: 10, available: 1, path: "/").category == .resource)
    }

    @Test func messagesSayWhatToDo() {
        #expect(HearthError.hubAuthenticationRequired(repo: "a/b").message.contains("HF_TOKEN"))
        #expect(HearthError.hubAccessDenied(repo: "org/gated", gated: true).message.contains("https://huggingface.co/org/gated"))
        #expect(HearthError.hubRateLimited(retryAfter: 7).message.contains("retry after 7 s"))
        #expect(HearthError.offlineNotCached(name: "a/b").message.contains("HF_HUB_OFFLINE"))
    }
}
