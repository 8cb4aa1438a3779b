// Renders /openapi.json with the vendored Swagger UI; nothing is fetched from anywhere but this service.
(function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    domNode: root,
    layout: "BaseLayout",
    deepLinking: true,
    validatorUrl: null,          // the default would send the document to an online validator
    persistAuthorization: false  // a token typed into "Authorize" is not kept in the browser's storage
  });
})();
