# Builds the stencil image: a static binary on distroless.
#   docker build --build-arg VERSION=$(git describe --tags --always) -t stencil .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v0.0.0-dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /stencil .

FROM gcr.io/distroless/static:nonroot
COPY --from=build /stencil /stencil
USER 65532:65532
ENTRYPOINT ["/stencil"]
