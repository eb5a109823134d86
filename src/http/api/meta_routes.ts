/** GET /v0/openapi.json: the API's own document (docs/http-api.md "The API described"). */
import { type Route, route } from "../route_table.ts";

/**
 * The document route over `routes`, the whole table (a getter: the table holds this route). The
 * document is built from it on the first request and kept: openapi.ts is loaded only then, so a
 * runtime nobody asks costs nothing for it.
 */
export function metaRoutes(routes: () => readonly Route[]): readonly Route[] {
  const openApiDocument = async (): Promise<Response> => {
    const { openApiDocumentText } = await import("../openapi.ts");
    return new Response(openApiDocumentText(routes()), {
      status: 200,
      headers: { "content-type": "application/json" },
    });
  };
  return [
    route("GET", "/v0/openapi.json", openApiDocument, {
      doc: {
        operationId: "getOpenApiDocument",
        summary: "This document (OpenAPI 3.1), built from the route table",
        tag: "meta",
        description: "The one answer without the `status` envelope: it is the document itself.",
        response: {
          contentType: "application/json",
          description: "The OpenAPI 3.1 document.",
          schema: { type: "object", required: ["openapi", "info", "paths"] },
        },
      },
    }),
  ];
}
