import HTTPTypes
import Hummingbird
import NIOCore

/// /health for load balancers, /metrics for Prometheus, and the root that Ollama's clients
/// probe.
struct HealthController: Sendable {
    let service: HearthService

    func addRoutes(to router: some RouterMethods<BasicRequestContext>) {
        router.get("health") { _, _ in
            let replica = service.configuration.replica
            if service.drain.isDraining {
                return try JSONBody.response(["status": "draining", "replica": replica], status: .serviceUnavailable)
            }
            return try JSONBody.response(["status": "ok", "replica": replica])
        }
        router.get("metrics") { _, _ in
            await updateGauges()
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: service.metrics.text())))
        }
        router.head("/") { _, _ in Response(status: .ok) }
    }

    private func updateGauges() async {
        let running = await service.models.running()
        var busy = 0
        var waiting = 0
        for (model, _) in running {
            if case .language(let language, let slots) = model.kind {
                service.metrics.passes(model: model.name, language.passes)
                service.metrics.cache(model: model.name, types: language.cacheTypes,
                                      bytes: language.cacheBytesPerContext * slots.slotCount)
                busy += await slots.busyCount
                waiting += await slots.waitingCount
            }
        }
        service.metrics.gauges(loaded: running.count, busy: busy, waiting: waiting)
    }
}
