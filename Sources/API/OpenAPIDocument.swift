import Hummingbird

/// `GET /openapi.yaml`: the API as it behaves, in OpenAPI 3.1, served as it is written in
/// `Resources/openapi.yaml` (compiled into the binary, so a deployment carries no resource
/// bundle). `APITests` checks both ways: every operation in it answers, and every route the router
/// has is described in it.
public struct OpenAPIDocument: Sendable {
    func addRoutes(to router: Router<MomentsRequestContext>) {
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_yaml)))
        }
    }

    /// The document's text.
    public static var yaml: String { String(decoding: PackageResources.openapi_yaml, as: UTF8.self) }
}
