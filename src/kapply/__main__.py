from kapply.cli.main import main

main()
