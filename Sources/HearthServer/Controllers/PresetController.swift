import Hearth
import Hummingbird

/// The style presets a thread may use, listed at /v1/presets with their sampling settings.
struct PresetController: Sendable {
    /// The presets' names, in the order the web UI offers them.
    static let names = ["creative", "balanced", "precise", "code"]

    private struct Preset: Encodable, Sendable {
        var name: String
        var temperature: Float
        var top_k: Int?
        var top_p: Float?
        var min_p: Float?
    }

    func addRoutes(to router: some RouterMethods<BasicRequestContext>) {
        router.get("v1/presets") { _, _ in
            let presets = Self.names.compactMap { name in
                GenerationOptions.preset(named: name).map {
                    Preset(name: name, temperature: $0.temperature, top_k: $0.sampling.topK, top_p: $0.sampling.topP, min_p: $0.sampling.minP)
                }
            }
            return try JSONBody.response(List(data: presets))
        }
    }
}
