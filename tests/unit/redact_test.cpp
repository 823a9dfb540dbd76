// The redaction of secrets from argv and the environment (collector/redact.h): real-world secret
// shapes must come out without the secret, look-alikes must come out unchanged.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "oom_bundle.h"
#include "redact.h"

namespace gmp {
namespace {

struct Case {
  std::string input, expected;
};

// Obviously fake bodies in the real formats (a scanner of this repository should not mistake them).
const std::string kAlnum36 = "FAKEfake0123456789FAKEfake0123456789";
const std::string kJwt =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmYWtlIn0.FAKEsignatureFAKEsignatureFAKEsignature_-";

TEST(Redact, SecretShapesInsideValues) {
  const std::vector<Case> cases = {
      // URL userinfo
      {"postgres://app:hunter2@db.internal:5432/prod", "postgres://app:<redacted>@db.internal:5432/prod"},
      {"redis://:s3cr3tpass@cache:6379/0", "redis://:<redacted>@cache:6379/0"},
      {"mongodb+srv://admin:p%40ss@cluster0.example.net/db?retryWrites=true",
       "mongodb+srv://admin:<redacted>@cluster0.example.net/db?retryWrites=true"},
      {"amqp://guest:guest@rabbit:5672/", "amqp://guest:<redacted>@rabbit:5672/"},
      {"mysql://root:p@ss@db/x", "mysql://root:<redacted>@db/x"},
      {"http://proxyuser:proxypass@proxy.corp:3128", "http://proxyuser:<redacted>@proxy.corp:3128"},
      {"https://x-access-token:abcdef0123456789@github.com/o/r.git",
       "https://x-access-token:<redacted>@github.com/o/r.git"},
      {"https://0123456789abcdef0123456789abcdef@github.com/o/r.git", "https://<redacted>@github.com/o/r.git"},
      {"http://u:p1@a,http://v:p2@b", "http://u:<redacted>@a,http://v:<redacted>@b"},
      // Sentry DSN: the key is the userinfo
      {"https://0123456789abcdef0123456789abcdef@o450000.ingest.sentry.io/5555555",
       "https://<redacted>@o450000.ingest.sentry.io/5555555"},
      // connection strings
      {"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyFAKE+/==;EndpointSuffix=core.windows.net",
       "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=<redacted>;EndpointSuffix=core.windows.net"},
      {"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=abc=",
       "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=<redacted>"},
      {"BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&sig=abc%2Bdef",
       "BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=<redacted>&ss=b&sig=<redacted>"},
      {"Server=tcp:db,1433;Database=app;User ID=sa;Password=Hunter2!;Encrypt=true",
       "Server=tcp:db,1433;Database=app;User ID=sa;Password=<redacted>;Encrypt=true"},
      {"Server=db;Uid=app;Pwd=hunter2;", "Server=db;Uid=app;Pwd=<redacted>;"},
      // query parameters
      {"https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01&sig=abc%2Bdef%3D",
       "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01&sig=<redacted>"},
      {"https://api.example.com/v1?access_token=abc123&format=json",
       "https://api.example.com/v1?access_token=<redacted>&format=json"},
      {"https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=FAKE%2F20230101&"
       "X-Amz-Security-Token=FAKE&X-Amz-Signature=deadbeef",
       "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=<redacted>&"
       "X-Amz-Security-Token=<redacted>&X-Amz-Signature=<redacted>"},
      {"https://maps.example.com/geocode?key=FAKEKEY&q=x", "https://maps.example.com/geocode?key=<redacted>&q=x"},
      {"https://app.example.com/cb#access_token=abc&state=xyz", "https://app.example.com/cb#access_token=<redacted>&state=xyz"},
      // webhooks
      {"https://hooks.slack.com/services/T00000000/B00000000/FAKEFAKEFAKEFAKEFAKEFAKE", "https://hooks.slack.com/<redacted>"},
      {"https://discord.com/api/webhooks/123456789012345678/FAKE_fake-FAKE",
       "https://discord.com/api/webhooks/<redacted>"},
      {"https://contoso.webhook.office.com/webhookb2/aaa@bbb/IncomingWebhook/ccc/ddd",
       "https://contoso.webhook.office.com/<redacted>"},
      {"https://example.com/hooks/catch/123/abc?x=1", "https://example.com/hooks/<redacted>?x=1"},
      // well-known token prefixes
      {"ghp_" + kAlnum36, "ghp_<redacted>"},
      {"token ghs_" + kAlnum36 + " end", "token ghs_<redacted> end"},
      {"github_pat_11FAKE0123456789_" + kAlnum36, "github_pat_<redacted>"},
      {"glpat-FAKEfake0123456789_-x", "glpat-<redacted>"},
      {"xoxb-1234567890-1234567890123-FAKEfakeFAKEfakeFAKEfake", "xoxb-<redacted>"},
      {"xoxp-1234567890-FAKEfake", "xoxp-<redacted>"},
      {"sk-proj-FAKEfake0123456789FAKEfake", "sk-<redacted>"},
      {"sk-ant-api03-FAKEfake0123456789FAKEfake", "sk-<redacted>"},
      {"sk_live_FAKEfake0123456789", "sk_live_<redacted>"},
      {"AKIAFAKEFAKEFAKEFAKE", "AKIA<redacted>"},
      {"creds=(ASIAFAKEFAKEFAKEFAKE)", "creds=(ASIA<redacted>)"},
      {"hf_FAKEfakeFAKEfakeFAKEfakeFAKEfakeFA", "hf_<redacted>"},
      {"npm_" + kAlnum36, "npm_<redacted>"},
      {"pypi-AgEIcHlwaS5vcmc" + kAlnum36 + kAlnum36, "pypi-<redacted>"},
      {"AIzaSyFAKEfake0123456789FAKEfake01234", "AIza<redacted>"},
      {"ya29.a0FAKEfake0123456789FAKEfake", "ya29.<redacted>"},
      {"jwt " + kJwt, "jwt eyJ<redacted>"},
      {"curl -H 'Authorization:Bearer abc.def-ghi_jkl'", "curl -H 'Authorization:Bearer <redacted>'"},
      // headers, YAML, JSON, PEM
      {"Authorization: Bearer abc.def.ghi", "Authorization: <redacted>"},
      {"X-Api-Key: 0123456789abcdef", "X-Api-Key: <redacted>"},
      {"Cookie: session=abc; theme=dark", "Cookie: <redacted>"},
      {"user: bob\npassword: hunter2\nport: 5432", "user: bob\npassword: <redacted>\nport: 5432"},
      {R"({"user": "bob", "password": "hunter \"2\"", "port": 5432})",
       R"({"user": "bob", "password": "<redacted>", "port": 5432})"},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
       "-----BEGIN OPENSSH PRIVATE KEY-----<redacted>-----END OPENSSH PRIVATE KEY-----\n"},
      // options inside a longer value
      {"--password=hunter2 --user=bob", "--password=<redacted> --user=bob"},
      {"mysql --pw hunter2 -h db", "mysql --pw <redacted> -h db"},
      {"mysqladmin -u root password hunter2", "mysqladmin -u root password <redacted>"},
      {"run --api-key FAKEkey --verbose", "run --api-key <redacted> --verbose"},
      // configuration files' spaced pairs
      {"[default]\naws_secret_access_key = FAKEsecret/FAKE+secret\nregion = x",
       "[default]\naws_secret_access_key = <redacted>\nregion = x"},
      // an access key id and its secret, the secret half too
      {"AKIAFAKEFAKEFAKEFAKE:FAKEsecret/FAKE+secretFAKE0123456789abcd", "AKIA<redacted>:<redacted>"},
      {"AKIAFAKEFAKEFAKEFAKE FAKEsecret", "AKIA<redacted> <redacted>"},
      {"GOOG1EFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE FAKEsecret+FAKE/secret=", "GOOG1<redacted> <redacted>"},
      // a bot's token in a URL path
      {"https://api.telegram.org/bot123456789:AAFAKE-fake_FAKE/sendMessage",
       "https://api.telegram.org/bot123456789:<redacted>/sendMessage"},
  };
  ASSERT_GE(cases.size(), 30u);
  for (const auto& c : cases) {
    EXPECT_EQ(redact_text(c.input), c.expected) << c.input;
    EXPECT_EQ(redact_text(c.expected), c.expected) << "not idempotent: " << c.expected;
  }
}

TEST(Redact, LookAlikeValuesStayUntouched) {
  for (const std::string v : {
           "https://example.com/a/b?x=1&page=2",
           "https://github.com/org/repo/settings/hooks",
           "ssh://host:22/srv/repo",
           "user@example.com",
           "git@github.com:org/repo.git",
           "expandable_segments:True,max_split_size_mb:128",
           "/usr/local/cuda/bin:/usr/bin:/bin",
           "en_US.UTF-8",
           "/opt/sk-learn-models/resnet50",
           "task-sk-1",
           "Basic usage: see docs",
           "host:8080",
           "--batch-size=32 --max-new-tokens=256",
           "tokenizer: gpt2",
           "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
           "kubectl create secret generic app-config",
           "--use-auth-token --fp16",
           "x = 1, ratio = 0.5",
           "https://ml.example.com/v1/projects/p/models/m:predict",
       }) {
    EXPECT_EQ(redact_text(v), v);
  }
}

TEST(Redact, SecretNames) {
  for (const char* name :
       {"HF_TOKEN", "MY_API_TOKEN", "GITHUB_TOKEN", "HFTOKEN", "AWS_SESSION_TOKEN", "WANDB_API_KEY", "APIKEY", "api_key",
        "AccountKey", "AWS_SECRET_ACCESS_KEY", "DJANGO_SECRET_KEY", "PGPASSWORD", "MYSQL_PWD", "DB_PASS", "DB_PASS2",
        "PASSWD", "GH_PAT", "COOKIE", "SENTRY_DSN", "SLACK_WEBHOOK_URL", "AZURE_STORAGE_CONNECTION_STRING",
        "ConnectionString", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH_SOCK", "PRIVATE_KEY_PATH", "SSL_CERT_FILE",
        "SESSION_ID", "sig", "X-Amz-Signature", "--db-password", "dbPassword", "-Djavax.net.ssl.keyStorePassword",
        "--pw", "DB_PW"}) {
    EXPECT_TRUE(is_secret_name(name)) << name;
  }
  for (const char* name :
       {"PATH", "PWD", "OLDPWD", "LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "TOKENIZERS_PARALLELISM",
        "HOME", "HOSTNAME", "PYTORCH_CUDA_ALLOC_CONF", "NCCL_SOCKET_IFNAME", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE",
        "LOCAL_RANK", "KEYRING_BACKEND", "PIN_MEMORY", "SLURM_JOB_PARTITION", "AWS_ACCESS_KEY_ID", "BYPASS_CACHE",
        "--batch-size", "--max-new-tokens", "--num-key-value-heads", "--sigma", "--keyword", "SharedAccessKeyName",
        "PWR_LIMIT"}) {
    EXPECT_FALSE(is_secret_name(name)) << name;
  }
}

TEST(Redact, EnvironmentValues) {
  EXPECT_EQ(redact_env_value("HF_TOKEN", "hf_whatever"), "<redacted>");
  EXPECT_EQ(redact_env_value("HF_TOKEN", ""), "");
  EXPECT_EQ(redact_env_value("DATABASE_URL", "postgres://app:hunter2@db/prod"), "postgres://app:<redacted>@db/prod");
  EXPECT_EQ(redact_env_value("EXTRA_ARGS", "--password=hunter2 -v"), "--password=<redacted> -v");
  EXPECT_EQ(redact_env_value("PWD", "/home/u/password-manager"), "/home/u/password-manager");
  EXPECT_EQ(redact_env_value("PATH", "/usr/bin:/bin"), "/usr/bin:/bin");
}

TEST(Redact, CommandLines) {
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"train.py", "--password=hunter2"}, {"train.py", "--password=<redacted>"}},
      {{"train.py", "--password=two words"}, {"train.py", "--password=<redacted>"}},
      {{"train.py", "--password", "hunter2", "--epochs", "3"}, {"train.py", "--password", "<redacted>", "--epochs", "3"}},
      {{"x", "--api-key", "abc", "--batch-size", "32"}, {"x", "--api-key", "<redacted>", "--batch-size", "32"}},
      {{"x", "-hf_token", "abc"}, {"x", "-hf_token", "<redacted>"}},
      {{"x", "--token", "abc", "data.txt"}, {"x", "--token", "<redacted>", "data.txt"}},
      {{"x", "DB_PASS=hunter2"}, {"x", "DB_PASS=<redacted>"}},
      {{"java", "-Djavax.net.ssl.keyStorePassword=changeit"}, {"java", "-Djavax.net.ssl.keyStorePassword=<redacted>"}},
      {{"x", "--db-url", "postgres://u:pw@h/db"}, {"x", "--db-url", "postgres://u:<redacted>@h/db"}},
      {{"x", "--db-url=postgres://u:pw@h/db"}, {"x", "--db-url=postgres://u:<redacted>@h/db"}},
      {{"curl", "-H", "Authorization: Bearer abcdefgh123"}, {"curl", "-H", "Authorization: <redacted>"}},
      {{"x", "ghp_" + kAlnum36}, {"x", "ghp_<redacted>"}},
      // a boolean secret-named flag: the next option is not its value
      {{"x", "--use-auth-token", "--fp16"}, {"x", "--use-auth-token", "--fp16"}},
      {{"x", "--password="}, {"x", "--password="}},
      {{"x", "--pw", "hunter2"}, {"x", "--pw", "<redacted>"}},
      {{"mysqladmin", "-u", "root", "password", "hunter2"}, {"mysqladmin", "-u", "root", "password", "<redacted>"}},
      {{"sh", "-c", "mysql --pw hunter2"}, {"sh", "-c", "mysql --pw <redacted>"}},
  };
  for (const auto& [in, expected] : cases) EXPECT_EQ(redact_argv(in), expected) << in[1];
}

TEST(Redact, LookAlikeCommandLinesStayUntouched) {
  const std::vector<std::string> argv = {"python", "train.py", "--batch-size=32", "--max-new-tokens", "256",
                                         "-p", "8080", "--lr", "3e-4", "--num-key-value-heads", "8",
                                         "--tokenizer", "gpt2", "https://example.com/data.tar", "--", "PATH=/x"};
  EXPECT_EQ(redact_argv(argv), argv);
}

// environment.json of an OOM bundle: every value goes through the redaction, not only secret names.
TEST(Redact, BundleEnvironment) {
  std::vector<std::string> entries = {
      "DATABASE_URL=postgres://app:hunter2@db/prod", "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T/B/X",
      "MYSQL_PWD=hunter2", "GH_PAT=abc", "PWD=/work", "OLDPWD=/home", "CUDA_VISIBLE_DEVICES=0,1", "EMPTY_TOKEN=",
      "NOEQUALS"};
  std::vector<char*> envp;
  for (auto& e : entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  EXPECT_EQ(redacted_environment(envp.data()), nlohmann::json({{"DATABASE_URL", "postgres://app:<redacted>@db/prod"},
                                                               {"SLACK_WEBHOOK_URL", "<redacted>"},
                                                               {"MYSQL_PWD", "<redacted>"},
                                                               {"GH_PAT", "<redacted>"},
                                                               {"PWD", "/work"},
                                                               {"OLDPWD", "/home"},
                                                               {"CUDA_VISIBLE_DEVICES", "0,1"},
                                                               {"EMPTY_TOKEN", ""}}));
}

}  // namespace
}  // namespace gmp
