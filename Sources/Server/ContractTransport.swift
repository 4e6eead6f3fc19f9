import HTTPTypes
import Hummingbird
import NIOCore
import OpenAPIRuntime

/// The generated routes on the server's Hummingbird router, each body handed over whole: a request's (at most
/// 1 MiB) as one chunk or none, and an answer (a JSON value the handler made) as one buffer.
///
/// Written here rather than taken from swift-openapi-hummingbird, whose transport does the same job by
/// streaming each body through an asynchronous sequence that copies every chunk: with it, message sends over
/// HTTP ran at 9,400–10,700/s where the hand-written routes had run at 14,100–14,200/s in the same session
/// (Benchmarks/Server/http-ratio.sh), and `GET /healthz` at 32,000/s against 47,000–51,000/s.
struct ContractTransport: ServerTransport {
    let router: Router<ParleyContext>

    func register(
        _ handler:
            @escaping @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (
                HTTPResponse, HTTPBody?
            ),
        method: HTTPRequest.Method,
        path: String
    ) throws {
        router.on(RouterPath(path), method: method) { request, context in
            var body: HTTPBody?
            var head = request.head
            if request.method != .get && request.method != .head {
                // At most 1 MiB (413 over it); none when empty (a read marker moved to the newest message).
                let bytes = try await request.body.collect(upTo: context.maxUploadSize)
                if bytes.readableBytes > 0 {
                    body = HTTPBody(bytes.readableBytesView)
                    // Every body of the contract is JSON, read as JSON whatever type it declares (`curl -d`
                    // says a form), as it always was.
                    head.headerFields[.contentType] = "application/json"
                }
            }
            var parameters: [String: Substring] = [:]
            for (key, value) in context.parameters { parameters[String(key)] = value }
            let (response, answer) = try await handler(head, body, .init(pathParameters: parameters))
            var buffer = ByteBuffer()
            if let answer {
                for try await chunk in answer { buffer.writeBytes(chunk) }
            }
            return Response(status: response.status, headers: response.headerFields, body: .init(byteBuffer: buffer))
        }
    }
}
