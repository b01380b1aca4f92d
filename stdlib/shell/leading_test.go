package shell

import (
	"slices"
	"testing"
)

// The command of az and gcloud is their leading words, as they read them:
// an option's value is never a group or a verb, the program-wide options
// may come before or among the words, and az's words are compared in
// lower case.
func TestLeadingCommandPositionals(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		// A valued option's value is not the verb.
		{"az storage blob list --prefix delete", []string{"storage", "blob", "list"}},
		{"az storage blob list --container-name c --prefix delete -o table", []string{"storage", "blob", "list"}},
		{"az group show --name delete", []string{"group", "show"}},
		{"az group list --query \"[?name=='delete']\"", []string{"group", "list"}},
		// The verb, before the command's options.
		{"az storage blob delete --prefix x", []string{"storage", "blob", "delete"}},
		{"az group delete -n x", []string{"group", "delete"}},
		{"az group delete --name rg --yes --no-wait", []string{"group", "delete"}},
		// The verb after a program-wide option (and its value).
		{"az -o none group delete -n rg", []string{"group", "delete"}},
		{"az --subscription prod group delete -n rg", []string{"group", "delete"}},
		{"az group --debug delete -n rg", []string{"group", "delete"}},
		{"az --query=id --only-show-errors group delete -n rg", []string{"group", "delete"}},
		{"az -otable group delete -n rg", []string{"group", "delete"}},
		// az reads its command in any case.
		{"az group DELETE --name show", []string{"group", "delete"}},
		{"az Group Delete -n rg", []string{"group", "delete"}},
		// A command's argument right after it stays a word.
		{"az config set core.output=table", []string{"config", "set", "core.output=table"}},
		// gcloud: the same, with gcloud-wide flags.
		{"gcloud compute instances list --filter delete", []string{"compute", "instances", "list"}},
		{"gcloud compute instances list --filter=name:delete --format json", []string{"compute", "instances", "list"}},
		{"gcloud compute instances delete --zone z vm-1", []string{"compute", "instances", "delete"}},
		{"gcloud --project p compute instances delete vm-1", []string{"compute", "instances", "delete", "vm-1"}},
		{"gcloud -q --verbosity debug compute instances delete vm-1", []string{"compute", "instances", "delete", "vm-1"}},
		{"gcloud compute instances delete list", []string{"compute", "instances", "delete", "list"}},
		{"gcloud compute instances list --project demo", []string{"compute", "instances", "list"}},
		// Other programs keep their model.
		{"git -C dir push origin main", []string{"push", "origin", "main"}},
		{"aws --profile p s3 ls", []string{"s3", "ls"}},
		{"aws --ca-bundle b.pem --color on --cli-connect-timeout 5 --cli-binary-format raw-in-base64-out ec2 terminate-instances",
			[]string{"ec2", "terminate-instances"}},
	} {
		p := Parse(tc.cmd)
		if len(p.Commands) != 1 {
			t.Fatalf("%q: %d commands", tc.cmd, len(p.Commands))
		}
		c := p.Commands[0]
		if got := c.Positionals(); !slices.Equal(got, tc.want) {
			t.Errorf("%q: positionals %q, want %q", tc.cmd, got, tc.want)
		}
	}
}
