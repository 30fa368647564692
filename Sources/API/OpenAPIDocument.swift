import Hummingbird

/// `GET /openapi.yaml`: the API as it behaves, in OpenAPI 3.1. `APITests` checks both ways: every
/// operation here answers on a running server, and every route the router has is described here.
public struct OpenAPIDocument: Sendable {
    func addRoutes(to router: Router<MomentsRequestContext>) {
        router.get("openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: Self.yaml)))
        }
    }

    public static let yaml = """
        openapi: 3.1.0
        info:
          title: Moments API
          version: 1.0.0
          description: >-
            Upload a phone video, follow the job, download a ~30-second highlight. Errors are always
            {"error": {"code": "...", "message": "..."}}. Requests under /api/v1 carry a device token
            (Authorization: Bearer, from POST /api/v1/devices) unless the server runs with AUTH_REQUIRED=false;
            a job is visible only to the device that made it (404 for anyone else).
        security:
          - device: []
        paths:
          /api/v1/devices:
            post:
              summary: Register a device; the token is shown once (only its hash is stored)
              security: []
              requestBody:
                content:
                  application/json:
                    schema: {type: object, properties: {name: {type: string, maxLength: 100}}}
              responses:
                '201': {description: Registered, content: {application/json: {schema: {$ref: '#/components/schemas/Registered'}}}}
                '400': {$ref: '#/components/responses/Error'}
                '429': {$ref: '#/components/responses/RateLimited'}
          /api/v1/me:
            get:
              summary: The device's plan and this month's usage
              responses:
                '200': {description: Plan and usage, content: {application/json: {schema: {$ref: '#/components/schemas/Me'}}}}
                '401': {$ref: '#/components/responses/Error'}
          /api/v1/upload:
            post:
              summary: Upload a video (multipart) and start a highlight job
              requestBody:
                required: true
                content:
                  multipart/form-data:
                    schema:
                      type: object
                      required: [file]
                      properties:
                        file: {type: string, format: binary, description: The video; its declared type may be video/mp4 whatever it is}
                        target_duration: {type: integer, minimum: 5, maximum: 120, default: 30}
                        quality: {type: string, enum: [high, medium, low], default: high}
                        codec: {type: string, enum: [auto, h264], default: auto, description: 'auto copies the video''s own H.264 or HEVC (hvc1, HDR kept) between keyframes where it can, else encodes H.264; h264 always encodes 8-bit SDR H.264 (HDR tone-mapped)'}
                        callback_url: {type: string, format: uri, description: Gets a signed POST when the job ends (servers with WEBHOOK_SECRET)}
              responses:
                '200': {description: Accepted, content: {application/json: {schema: {$ref: '#/components/schemas/Accepted'}}}}
                '400': {$ref: '#/components/responses/Error'}
                '401': {$ref: '#/components/responses/Error'}
                '402': {$ref: '#/components/responses/Error'}
                '413': {$ref: '#/components/responses/Error'}
                '415': {$ref: '#/components/responses/Error'}
                '422': {$ref: '#/components/responses/Error'}
                '429': {$ref: '#/components/responses/RateLimited'}
                '503': {$ref: '#/components/responses/Error'}
          /api/v1/upload/formats:
            get:
              summary: What can be uploaded
              security: []
              responses:
                '200': {description: Formats, content: {application/json: {schema: {$ref: '#/components/schemas/Formats'}}}}
          /api/v1/uploads:
            post:
              summary: Reserve a direct upload (S3 storage) and get a presigned PUT URL
              requestBody:
                content:
                  application/json:
                    schema:
                      type: object
                      properties:
                        filename: {type: string}
                        target_duration: {type: integer, minimum: 5, maximum: 120}
                        quality: {type: string, enum: [high, medium, low]}
                        codec: {type: string, enum: [auto, h264], default: auto, description: 'auto copies the video''s own H.264 or HEVC (hvc1, HDR kept) between keyframes where it can, else encodes H.264; h264 always encodes 8-bit SDR H.264 (HDR tone-mapped)'}
                        callback_url: {type: string, format: uri}
              responses:
                '200': {description: Reserved, content: {application/json: {schema: {$ref: '#/components/schemas/Reserved'}}}}
                '400': {$ref: '#/components/responses/Error'}
                '401': {$ref: '#/components/responses/Error'}
                '402': {$ref: '#/components/responses/Error'}
                '409': {$ref: '#/components/responses/Error'}
                '422': {$ref: '#/components/responses/Error'}
                '429': {$ref: '#/components/responses/RateLimited'}
          /api/v1/jobs/{id}/start:
            post:
              summary: Start a job whose file was PUT to its upload URL
              parameters: [{$ref: '#/components/parameters/id'}]
              responses:
                '200': {description: Started, content: {application/json: {schema: {$ref: '#/components/schemas/Accepted'}}}}
                '402': {$ref: '#/components/responses/Error'}
                '404': {$ref: '#/components/responses/Error'}
                '409': {$ref: '#/components/responses/Error'}
                '413': {$ref: '#/components/responses/Error'}
          /api/v1/jobs/{id}/status:
            get:
              summary: The job's status (poll every 2 s)
              parameters: [{$ref: '#/components/parameters/id'}]
              responses:
                '200': {description: Status, content: {application/json: {schema: {$ref: '#/components/schemas/JobStatus'}}}}
                '404': {$ref: '#/components/responses/Error'}
          /api/v1/jobs/{id}:
            get:
              summary: The job's details
              parameters: [{$ref: '#/components/parameters/id'}]
              responses:
                '200': {description: Details, content: {application/json: {schema: {$ref: '#/components/schemas/JobDetails'}}}}
                '404': {$ref: '#/components/responses/Error'}
            delete:
              summary: Cancel a pending or running job
              parameters: [{$ref: '#/components/parameters/id'}]
              responses:
                '200': {description: Cancelled, content: {application/json: {schema: {$ref: '#/components/schemas/JobStatus'}}}}
                '404': {$ref: '#/components/responses/Error'}
                '409': {$ref: '#/components/responses/Error'}
          /api/v1/jobs/{id}/events:
            get:
              summary: Server-Sent Events of the job's status until it ends
              parameters: [{$ref: '#/components/parameters/id'}]
              responses:
                '200': {description: '`event: status` with the JobStatus JSON at every change', content: {text/event-stream: {schema: {type: string}}}}
                '404': {$ref: '#/components/responses/Error'}
          /api/v1/jobs/{id}/download:
            get:
              summary: The highlight MP4 (a redirect to signed storage, or the file with Range support)
              parameters: [{$ref: '#/components/parameters/id'}, {name: Range, in: header, schema: {type: string}}]
              responses:
                '200': {description: The MP4, content: {video/mp4: {schema: {type: string, format: binary}}}}
                '206': {description: Part of the MP4}
                '302': {description: Redirect to a short-lived signed URL}
                '404': {$ref: '#/components/responses/Error'}
                '409': {$ref: '#/components/responses/Error'}
                '410': {$ref: '#/components/responses/Expired'}
                '416': {description: Range not satisfiable}
          /health:
            get:
              security: []
              summary: The process is alive
              responses:
                '200': {description: OK}
          /ready:
            get:
              security: []
              summary: PostgreSQL, Redis and storage answer
              responses:
                '200': {description: Ready}
                '503': {description: Something is down; `checks` says what}
          /metrics:
            get:
              security: []
              summary: Prometheus metrics
              responses:
                '200': {description: Prometheus text format, content: {text/plain: {schema: {type: string}}}}
          /openapi.yaml:
            get:
              security: []
              summary: This document
              responses:
                '200': {description: OpenAPI 3.1, content: {application/yaml: {schema: {type: string}}}}
        components:
          securitySchemes:
            device: {type: http, scheme: bearer, description: 'A device token from POST /api/v1/devices (401 auth_required or invalid_token without a good one)'}
          parameters:
            id: {name: id, in: path, required: true, schema: {type: string, format: uuid}}
          responses:
            Error:
              description: An error
              content:
                application/json:
                  schema:
                    type: object
                    required: [error]
                    properties:
                      error:
                        type: object
                        required: [code, message]
                        properties:
                          code: {type: string, description: Stable machine code}
                          message: {type: string, description: A sentence to show}
            Expired:
              description: The highlight was deleted when its retention period ended (result_expired)
              content:
                application/json:
                  schema: {$ref: '#/components/responses/Error/content/application~1json/schema'}
            RateLimited:
              description: Too many uploads in a short time (rate_limited)
              headers:
                Retry-After: {schema: {type: integer}, description: Seconds to wait}
              content:
                application/json:
                  schema: {$ref: '#/components/responses/Error/content/application~1json/schema'}
          schemas:
            Registered:
              type: object
              required: [device_id, token, plan, created_at]
              properties:
                device_id: {type: string, format: uuid}
                token: {type: string, description: 'Send as Authorization: Bearer; shown only now'}
                plan: {type: string, enum: [free, pro]}
                created_at: {type: string, format: date-time}
            Me:
              type: object
              required: [device_id, plan, plan_description, usage]
              properties:
                device_id: {type: string, format: uuid}
                name: {type: [string, 'null']}
                plan: {type: string, enum: [free, pro]}
                plan_description: {type: string, examples: ['Free: 3 videos/month', 'Pro: Unlimited']}
                created_at: {type: string, format: date-time}
                usage:
                  type: object
                  properties:
                    used: {type: integer, description: Highlights this calendar month (UTC), failed and cancelled ones not counted}
                    limit: {type: [integer, 'null'], description: null on Pro}
                    remaining: {type: [integer, 'null']}
                    period_start: {type: string, format: date-time}
                    resets_at: {type: string, format: date-time}
            Accepted:
              type: object
              required: [job_id, message, estimated_time]
              properties:
                job_id: {type: string, format: uuid}
                message: {type: string}
                estimated_time: {type: [integer, 'null'], description: Seconds}
            JobStatus:
              type: object
              required: [job_id, status, progress, message, result_url, created_at, completed_at, original_filename, duration, segments_selected]
              properties:
                job_id: {type: string, format: uuid}
                status: {type: string, enum: [pending, processing, completed, failed, cancelled]}
                progress: {type: integer, minimum: 0, maximum: 100}
                message: {type: [string, 'null']}
                result_url: {type: [string, 'null'], format: uri}
                created_at: {type: string, format: date-time, description: 'UTC, no fractional seconds'}
                completed_at: {type: [string, 'null'], format: date-time}
                original_filename: {type: [string, 'null']}
                duration: {type: [number, 'null'], description: Source seconds}
                segments_selected: {type: [integer, 'null']}
            JobDetails:
              allOf:
                - $ref: '#/components/schemas/JobStatus'
                - type: object
                  properties:
                    stage: {type: [string, 'null']}
                    quality: {type: string, enum: [high, medium, low]}
                    codec: {type: string, enum: [auto, h264]}
                    target_duration: {type: number}
                    error_code: {type: [string, 'null']}
                    error_message: {type: [string, 'null']}
                    attempt: {type: integer}
                    max_attempts: {type: integer}
                    started_at: {type: [string, 'null'], format: date-time}
                    updated_at: {type: string, format: date-time}
                    source_size: {type: [integer, 'null']}
                    result_size: {type: [integer, 'null']}
                    segments:
                      type: [array, 'null']
                      items: {type: object, properties: {start: {type: number}, end: {type: number}, score: {type: number}}}
            Formats:
              type: object
              properties:
                extensions: {type: array, items: {type: string}}
                containers: {type: array, items: {type: string}}
                max_size_bytes: {type: integer}
                max_duration_seconds: {type: integer}
                target_duration: {type: object, properties: {min: {type: integer}, max: {type: integer}, default: {type: integer}}}
                qualities: {type: array, items: {type: string}}
                default_quality: {type: string}
                codecs: {type: array, items: {type: string, enum: [auto, h264]}}
                default_codec: {type: string}
            Reserved:
              type: object
              properties:
                job_id: {type: string, format: uuid}
                upload_url: {type: string, format: uri}
                method: {type: string, const: PUT}
                expires_at: {type: string, format: date-time}
                max_size_bytes: {type: integer}

        """
}
