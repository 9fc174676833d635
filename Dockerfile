# The datadiff image: Debian's slim base, the datadiff Debian package, a non-root user.
#
#   cargo deb --locked                                   # target/debian/datadiff_<version>-1_<arch>.deb
#   docker build -t registry.example.com/datadiff:0.1.0 .
#   docker run --rm registry.example.com/datadiff:0.1.0 --version
#
# The build context is the checkout; .dockerignore sends only the package (keep one version
# in target/debian/). The image holds /usr/bin/datadiff, the C library, OpenSSL 3 and the
# system's root certificates (for sslrootcert: system and HTTPS alerts) — no shell tools
# beyond the base's, no PostgreSQL (`datadiff demo` needs PostgreSQL's server and is not for
# images). docs/deploy/cronjob.yaml runs it.
FROM debian:bookworm-slim

COPY target/debian/datadiff_*.deb /tmp/

RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends ca-certificates /tmp/datadiff_*.deb; \
    rm -rf /var/lib/apt/lists/* /tmp/datadiff_*.deb; \
    useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin datadiff

# The numeric id lets Kubernetes' runAsNonRoot check it without reading /etc/passwd.
USER 10001:10001
WORKDIR /project
ENTRYPOINT ["datadiff"]
CMD ["--help"]
